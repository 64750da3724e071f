import { expect } from 'chai';
import { SerializedJson } from '../../src/handlers/serializedJson.js';

describe('SerializedJson', () => {
  const items = ['{"a":1}', '{"b":"Давление 120/80 мм рт. ст."}', '{"c":"😀 \\u0000"}'];

  it('encodes a list item by item into the same bytes as its whole text', () => {
    const json = new SerializedJson('{"records":[', items, '],"next":null}');
    expect(json.text).to.equal(`{"records":[${items.join(',')}],"next":null}`);
    expect(json.bytes.equals(Buffer.from(json.text, 'utf8'))).to.equal(true);
    expect((JSON.parse(json.bytes.toString('utf8')) as { records: unknown[] }).records).to.have.length(3);
  });

  it('writes an empty list and a text without items', () => {
    expect(JSON.parse(new SerializedJson('{"records":[', [], '],"next":null}').bytes.toString('utf8'))).to.deep.equal({ records: [], next: null });
    const whole = new SerializedJson('{"name":"Исследование"}');
    expect(whole.bytes.toString('utf8')).to.equal(whole.text);
  });

  it('encodes once', () => {
    const json = new SerializedJson('[', items, ']');
    expect(json.bytes).to.equal(json.bytes);
  });
});
