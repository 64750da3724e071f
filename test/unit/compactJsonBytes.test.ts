import { expect } from 'chai';
import fc from 'fast-check';
import { compactJsonBytes } from '../../src/compactJsonBytes.js';

/** JSON text spaced as PostgreSQL writes it: a blank after every `:` and `,` between tokens, none elsewhere. */
function spacedLikePostgres(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(spacedLikePostgres).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${spacedLikePostgres(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

const compacted = (text: string) => compactJsonBytes(Buffer.from(text, 'utf8')).toString('utf8');

describe('compactJsonBytes', () => {
  it('gives JSON.stringify\'s text for json_build_object\'s and jsonb\'s spacing', () => {
    expect(compacted('{"id" : 1, "values" : {"sbp": "232", "note": "a, b: c"}, "tables" : {"t": [{"x": null}, {"y": "\\\\"}]}}'))
      .to.equal('{"id":1,"values":{"sbp":"232","note":"a, b: c"},"tables":{"t":[{"x":null},{"y":"\\\\"}]}}');
  });

  it('keeps every string as it is, escaped quotes, backslashes and characters beyond ASCII included, for any JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      expect(compacted(spacedLikePostgres(value))).to.equal(JSON.stringify(value));
    }), { numRuns: 500 });
    expect(compacted('{"note" : "Zürich, 東京: \\" a"}')).to.equal('{"note":"Zürich, 東京: \\" a"}');
  });

  it('leaves compact text as it is, in the memory it was given', () => {
    const bytes = Buffer.from(JSON.stringify({ records: [{ a: 'x y' }], next: null }), 'utf8');
    const result = compactJsonBytes(bytes);
    expect(result.toString('utf8')).to.equal('{"records":[{"a":"x y"}],"next":null}');
    expect(result.buffer).to.equal(bytes.buffer);
  });
});
