import { expect } from 'chai';
import Ajv2020Module from 'ajv/dist/2020.js';
import { problemOf } from '../../src/handlers/problem.js';
import { shortJson, validationError } from '../../src/handlers/validationErrors.js';

// ajv is CommonJS with `exports.default`; under NodeNext its default import is the module object.
const Ajv2020 = Ajv2020Module.default;

/**
 * Keywords our request schemas do not use today (const, oneOf, anyOf, exclusive limits, any other),
 * refused as the API refuses a body: Ajv with `allErrors` and `verbose`, as in src/handlers/api.ts.
 */
function refusal(schema: object, body: unknown, lang: 'en' | 'ru' = 'en') {
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: false });
  const validate = ajv.compile({ type: 'object', properties: { requestBody: schema } });
  expect(validate({ requestBody: body })).to.equal(false);
  return problemOf(validationError(validate.errors ?? []), lang, 'test').body;
}

describe('validationError', () => {
  it('const names the one allowed value and the value received', () => {
    expect(refusal({ type: 'object', properties: { kind: { const: 'Bundle' } } }, { kind: 'Patient' }, 'ru').errors).to.deep.equal([
      { pointer: '/kind', code: 'const', allowed: ['Bundle'], received: '"Patient"', message: 'Значение "kind" должно быть Bundle; получено "Patient".' },
    ]);
  });

  it('a failed oneOf or anyOf is one entry, without the errors of its branches', () => {
    const either = { oneOf: [{ type: 'integer' }, { type: 'null' }] };
    expect(refusal({ type: 'object', properties: { day: either } }, { day: 'x' }).errors).to.deep.equal([
      { pointer: '/day', code: 'oneOf', received: '"x"', message: '"day" must match exactly one of the forms it allows; received "x".' },
    ]);
    const any = { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }] };
    expect(refusal({ type: 'object', properties: { on: any } }, { on: 5 }, 'ru').errors).to.deep.equal([
      { pointer: '/on', code: 'anyOf', received: '5', message: 'Значение "on" должно соответствовать одной из допустимых форм; получено 5.' },
    ]);
  });

  it('exclusive limits, an object that takes no members, and any other keyword with its name', () => {
    expect(refusal({ type: 'number', exclusiveMinimum: 0 }, 0).errors?.[0]?.message).to.equal('"/" must be greater than 0; received 0.');
    expect(refusal({ type: 'number', exclusiveMaximum: 10 }, 10, 'ru').errors?.[0]?.message).to.equal('Значение "/" должно быть меньше 10; получено 10.');
    expect(refusal({ type: 'object', additionalProperties: false }, { x: 1 }).errors).to.deep.equal([
      { pointer: '/x', code: 'additionalProperties', allowed: [], message: 'Unknown member "x"; this object takes no members.' },
    ]);
    expect(refusal({ type: 'array', uniqueItems: true }, [1, 1]).errors).to.deep.equal([{
      pointer: '', code: 'schema', received: '[1,1]',
      message: '"/" is not accepted by the rule "uniqueItems" (must NOT have duplicate items (items ## 0 and 1 are identical)); received [1,1].',
    }]);
  });

  it('shortens a received value to 60 characters without splitting a character', () => {
    expect(shortJson('a'.repeat(58))).to.equal(`"${'a'.repeat(58)}"`);
    const emoji = shortJson('😀'.repeat(100));
    expect([...emoji]).to.have.length(60);
    expect(emoji).to.equal(`"${'😀'.repeat(58)}…`);

    expect(shortJson({ a: [1, 'two', null], b: true })).to.equal('{"a":[1,"two",null],"b":true}');
  });

  it('stops early on a value nested 100 000 levels deep or with a million members', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(shortJson(deep)).to.equal(`${'['.repeat(59)}…`);
    const wide = Object.fromEntries(Array.from({ length: 1_000_000 }, (_, i) => [`m${i}`, i]));
    expect(shortJson(wide)).to.equal(`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m…`);
  });
});
