import { expect } from 'chai';
import fc from 'fast-check';
import { compactJsonText } from '../../src/compactJsonText.js';

/** JSON text spaced as PostgreSQL writes it: a blank after every `:` and `,` between tokens, none elsewhere. */
function spacedLikePostgres(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(spacedLikePostgres).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${spacedLikePostgres(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

describe('compactJsonText', () => {
  it('gives JSON.stringify\'s text for json_build_object\'s and jsonb\'s spacing', () => {
    expect(compactJsonText('{"id" : 1, "values" : {"sbp": "232", "note": "a, b: c"}, "tables" : {"t": [{"x": null}, {"y": "\\\\"}]}}'))
      .to.equal('{"id":1,"values":{"sbp":"232","note":"a, b: c"},"tables":{"t":[{"x":null},{"y":"\\\\"}]}}');
  });

  it('keeps every string as it is, escaped quotes and backslashes included, for any JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      expect(compactJsonText(spacedLikePostgres(value))).to.equal(JSON.stringify(value));
    }), { numRuns: 500 });
  });
});
