import { expect } from 'chai';
import { asciiJsonText } from '../../src/asciiJsonText.js';

const parsedAscii = (text: string) => JSON.parse(asciiJsonText(Buffer.from(text, 'utf8')));
/** The text as a member's value after 200 KB of ASCII: a body nearly all ASCII, which takes the escaping path. */
const amid = (text: string) => `{"padding":"${'x'.repeat(200_000)}","value":${text}}`;

describe('asciiJsonText', () => {
  it('gives text that parses to exactly what the UTF-8 text parses to, beyond ASCII written as escapes', () => {
    const values = [
      '{"name":"José Müller","city":"Zürich"}',
      '{"диагноз":"Артериальная гипертензия","note":"血压 😀 𝄞"}',
      '["é","\\\\é","\\"é\\"","a\\u00e9b","\u2028\u2029",""]',
      '{"emoji":"👩‍⚕️ at the end"}',
      '"only ascii"',
    ];
    for (const text of values.map(amid)) {
      expect(parsedAscii(text), text).to.deep.equal(JSON.parse(text));
      expect(asciiJsonText(Buffer.from(text, 'utf8'))).to.match(/^[\x00-\x7f]*$/);
    }
  });

  it('keeps text that is not JSON not JSON', () => {
    for (const text of ['1é', 'é', '["\\é"]', '["\\\\\\é"]', '{é: 1}', '["a"]é'].flatMap((t) => [t, amid(t)])) {
      expect(() => JSON.parse(text), text).to.throw(SyntaxError);
      expect(() => parsedAscii(text), text).to.throw(SyntaxError);
    }
  });

  it('reads bodies of every mix the same way: all ASCII, a few runs beyond it, many, and mostly Cyrillic', () => {
    const rows = (text: (i: number) => string) => JSON.stringify(Array.from({ length: 20000 }, (_, i) => ({ id: i, text: text(i) })));
    const bodies = [
      rows(() => 'blood pressure 120/80 mm Hg'),
      rows((i) => (i % 400 === 0 ? 'José Müller' : 'John Smith')),
      rows((i) => (i % 5 === 0 ? 'Zoë' : 'Zoe')),
      rows((i) => `Пациент ${i} жалуется на головную боль`),
    ];
    for (const body of bodies) expect(JSON.parse(asciiJsonText(Buffer.from(body, 'utf8')))).to.deep.equal(JSON.parse(body));
  });

  it('reads the 3.8 MB Synthea bundle as UTF-8 decoding does', async () => {
    const { readFileSync } = await import('node:fs');
    const bytes = readFileSync('test/fixtures/fhir/synthea/smart-fletcher-hyatt-3794kb.json');
    expect(JSON.parse(asciiJsonText(bytes))).to.deep.equal(JSON.parse(bytes.toString('utf8')));
  });
});
