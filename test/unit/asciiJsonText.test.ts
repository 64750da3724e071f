import { expect } from 'chai';
import { asciiJsonText } from '../../src/asciiJsonText.js';

const parsedAscii = (text: string) => JSON.parse(asciiJsonText(Buffer.from(text, 'utf8')));

describe('asciiJsonText', () => {
  it('gives text that parses to exactly what the UTF-8 text parses to', () => {
    const texts = [
      '{"name":"José Müller","city":"Zürich"}',
      '{"диагноз":"Артериальная гипертензия","note":"血压 😀 𝄞"}',
      '["é","\\\\é","\\"é\\"","a\\u00e9b","\u2028\u2029",""]',
      '{"emoji":"👩‍⚕️ at the end"}',
      '"only ascii"',
    ];
    for (const text of texts) {
      expect(parsedAscii(text), text).to.deep.equal(JSON.parse(text));
      expect(asciiJsonText(Buffer.from(text, 'utf8'))).to.match(/^[\x00-\x7f]*$/);
    }
  });

  it('keeps text that is not JSON not JSON', () => {
    for (const text of ['{"a": 1é}', 'é', '["\\é"]', '["\\\\\\é"]', '{é: 1}', '["a"]é']) {
      expect(() => JSON.parse(text), text).to.throw(SyntaxError);
      expect(() => parsedAscii(text), text).to.throw(SyntaxError);
    }
  });

  it('reads the 3.8 MB Synthea bundle as UTF-8 decoding does', async () => {
    const { readFileSync } = await import('node:fs');
    const bytes = readFileSync('test/fixtures/fhir/synthea/smart-fletcher-hyatt-3794kb.json');
    expect(JSON.parse(asciiJsonText(bytes))).to.deep.equal(JSON.parse(bytes.toString('utf8')));
  });
});
