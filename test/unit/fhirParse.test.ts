/// <reference types="fhir" />
import { readFileSync, readdirSync } from 'node:fs';
import { expect } from 'chai';
import { DomainError } from '../../src/domain/errors.js';
import { entriesOfJson, parseNdjsonEntries } from '../../src/domain/fhir/parseFhirBody.js';
import { fhirJsonEntries } from '../helpers/fhirFiles.js';
import { at } from '../helpers/only.js';
import { validateR4 } from '../../src/domain/fhir/validateR4.js';

const FIXTURES = new URL('../fixtures/fhir/', import.meta.url);
const fixture = (path: string): Buffer => readFileSync(new URL(path, FIXTURES));
const fixtureJson = (path: string) => JSON.parse(fixture(path).toString('utf8')) as Record<string, unknown>;
const SYNTHEA = readdirSync(new URL('synthea/', FIXTURES)).sort();
const HL7 = readdirSync(new URL('hl7-examples/', FIXTURES)).sort();

/** The `fhir_not_fhir` reason of a call that must refuse. */
function refusal(call: () => unknown): string {
  try {
    call();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).code).to.equal('fhir_not_fhir');
    return String((error as DomainError).params.reason);
  }
  throw new Error('expected fhir_not_fhir');
}

describe('reading the FHIR body (entriesOfJson, parseNdjsonEntries)', () => {
  it('takes entry[].resource of a transaction Bundle and keeps each fullUrl', () => {
    const entries = fhirJsonEntries(fixture('synthea/smart-buster-hoeger-235kb.json'));
    expect(entries).to.have.length(66);
    expect(entries[0]?.resource.resourceType).to.equal('Patient');
    expect(entries[0]?.fullUrl).to.equal('urn:uuid:e4531916-b162-4f4b-90c2-ce37e132b8d4');
    expect(entries.map((e) => e.index)).to.deep.equal([...Array(66).keys()]);
  });

  it('takes every Bundle type and an empty Bundle', () => {
    for (const type of ['collection', 'searchset', 'document', 'batch']) {
      const body = JSON.stringify({ resourceType: 'Bundle', type, entry: [{ resource: fixtureJson('hl7-examples/observation-example.json') }] });
      expect(fhirJsonEntries(body).map((e) => e.resource.id)).to.deep.equal(['example']);
    }
    expect(fhirJsonEntries('{"resourceType":"Bundle","type":"collection"}').map((e) => e.resource)).to.deep.equal([]);
  });

  it('takes a single resource', () => {
    const text = fixture('hl7-examples/observation-example-f001-glucose.json').toString('utf8');
    expect(fhirJsonEntries(text).map((e) => `${e.resource.resourceType}/${e.resource.id}`)).to.deep.equal(['Observation/f001']);
  });

  it('takes NDJSON with a byte order mark', () => {
    const text = JSON.stringify(fixtureJson('hl7-examples/observation-example-f001-glucose.json'));
    expect(parseNdjsonEntries(`\ufeff${text}\n`)[0]?.resource.id).to.equal('f001');
  });

  it('takes NDJSON: one resource per non-empty line, CRLF or LF, a Bundle line counting as its entries', () => {
    const lines = ['patient-example.json', 'observation-example.json', 'observation-example-heart-rate.json'].map((f) =>
      JSON.stringify(fixtureJson(`hl7-examples/${f}`)),
    );
    const bundle = JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'urn:uuid:1', resource: { resourceType: 'Patient', id: 'x' } }] });
    const body = `${lines[0]}\r\n\r\n${lines[1]}\n   \n${lines[2]}\n${bundle}\n`;
    const entries = parseNdjsonEntries(body);
    expect(entries.map((e) => `${e.resource.resourceType}/${e.resource.id}`)).to.deep.equal([
      'Patient/example',
      'Observation/example',
      'Observation/heart-rate',
      'Patient/x',
    ]);
    expect(entries[3]?.fullUrl).to.equal('urn:uuid:1');
  });

  describe('refusals (fhir_not_fhir)', () => {
    // A JSON body arrives parsed (text that is not JSON is refused by the HTTP layer: test/api/fhir.test.ts).
    const cases: [string, string, 'json' | 'ndjson', RegExp][] = [
      ['an empty NDJSON body', '\n\n', 'ndjson', /the body is empty/],
      ['a JSON array', '[{"resourceType":"Patient"}]', 'json', /the body is a JSON array/],
      ['a JSON string', '"Patient"', 'json', /the body is not a JSON object/],
      ['null', 'null', 'json', /the body is not a JSON object/],
      ['an object without resourceType', '{"id":"1","gender":"male"}', 'json', /the body has no resourceType/],
      ['a lower-case resourceType', '{"resourceType":"patient"}', 'json', /the body has no resourceType/],
      ['a Bundle whose entry is not an array', '{"resourceType":"Bundle","entry":{}}', 'json', /Bundle.entry is not an array/],
      ['a Bundle entry that is not an object', '{"resourceType":"Bundle","entry":[1]}', 'json', /Bundle entry 0 is not an object/],
      ['a Bundle entry resource without resourceType', '{"resourceType":"Bundle","entry":[{"resource":{"id":"a"}}]}', 'json', /Bundle entry 0 has no resourceType/],
      ['an NDJSON line that is not JSON', '{"resourceType":"Patient"}\n\n{oops}', 'ndjson', /^line 3 is not valid JSON/],
      ['an NDJSON line that is an array', '{"resourceType":"Patient"}\n[]', 'ndjson', /^line 2 is a JSON array/],
      ['an NDJSON line without resourceType', '{"resourceType":"Patient"}\n{"id":"o1"}', 'ndjson', /^line 2 has no resourceType/],
    ];
    for (const [name, body, type, reason] of cases) {
      it(`refuses ${name}`, () => {
        expect(refusal(() => (type === 'json' ? entriesOfJson(JSON.parse(body)) : parseNdjsonEntries(body)))).to.match(reason);
      });
    }

    it('refuses the HL7 transaction example: its DELETE and GET entries carry no resource', () => {
      expect(refusal(() => fhirJsonEntries(fixture('hl7-examples/bundle-transaction.json')))).to.equal(
        'the body: Bundle entry 5 has no resource',
      );
    });
  });
});

describe('validateR4', function () {
  // The first call compiles the validators of the types it meets (about 1 s for a Synthea file).
  this.timeout(20_000);

  for (const file of SYNTHEA) {
    it(`accepts synthea/${file}`, () => {
      expect(() => validateR4(fhirJsonEntries(fixture(`synthea/${file}`)))).not.to.throw();
    });
  }

  it('accepts every HL7 example resource', () => {
    for (const file of HL7) {
      const resource = fixtureJson(`hl7-examples/${file}`) as unknown as fhir4.Resource;
      expect(() => validateR4([resource]), file).not.to.throw();
    }
  });

  it('ignores unknown members, as FHIR R4 allows (the Inferno bundle has an effectivePeriod.stop)', () => {
    const entries = fhirJsonEntries(fixture('synthea/inferno-uscore-patient-355-1113kb.json'));
    const bp = at(entries, 266, 'the entries').resource as fhir4.Observation;
    expect(bp.effectivePeriod).to.have.property('stop');
    expect(() => validateR4([{ ...bp, madeUp: 1 } as fhir4.Resource])).not.to.throw();
  });

  const glucose = () => fixtureJson('hl7-examples/observation-example-f001-glucose.json') as unknown as fhir4.Observation & Record<string, unknown>;
  const invalid: [string, (o: ReturnType<typeof glucose>) => unknown, string][] = [
    ['a string where a number belongs', (o) => ((o.valueQuantity as Record<string, unknown>).value = '6.3'), 'Observation/f001 (entry 0): /valueQuantity/value must be number'],
    ['an impossible dateTime', (o) => ((o.effectivePeriod as Record<string, unknown>).start = '2013-13-02'), 'Observation/f001 (entry 0): /effectivePeriod/start "2013-13-02" is not a valid FHIR dateTime'],
    ['a dateTime with hours but no time zone', (o) => (o.issued = '2013-04-03T15:30:10'), 'Observation/f001 (entry 0): /issued "2013-04-03T15:30:10" is not a valid FHIR instant'],
    ['a missing required member', (o) => delete (o as Record<string, unknown>).code, "Observation/f001 (entry 0): / must have required property 'code'"],
    ['a status outside its value set', (o) => (o.status = 'done' as 'final'), 'Observation/f001 (entry 0): /status must be one of "registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"'],
    ['a number where a CodeableConcept belongs', (o) => (o.code = 5 as unknown as fhir4.CodeableConcept), 'Observation/f001 (entry 0): /code must be object'],
    ['a single object where an array belongs', (o) => ((o as Record<string, unknown>).interpretation = { text: 'H' }), 'Observation/f001 (entry 0): /interpretation must be array'],
    ['an invalid contained resource', (o) => (o.contained = [{ resourceType: 'Medication', code: 'x' } as fhir4.Resource]), 'Observation/f001 (entry 0): /contained/0/code must be object'],
    ['a resourceType that is not R4', (o) => ((o as Record<string, unknown>).resourceType = 'Observations'), 'Observations/f001 (entry 0): /resourceType "Observations" is not an R4 resource type'],
  ];
  for (const [name, mutate, reason] of invalid) {
    it(`refuses ${name}, naming the resource and the path`, () => {
      const resource = glucose();
      mutate(resource);
      expect(refusal(() => validateR4([resource]))).to.equal(reason);
    });
  }

  it('names the Bundle entry of an invalid resource and validates resources nested in a Bundle', () => {
    const entries = fhirJsonEntries(fixture('synthea/smart-buster-hoeger-235kb.json'));
    const obs = entries.find((e) => e.resource.id === '13bfaf3c-434f-4e12-839a-5ee9cfd30dd8')!;
    (obs.resource as fhir4.Observation).effectiveDateTime = 'yesterday';
    expect(refusal(() => validateR4(entries))).to.equal(
      `Observation/13bfaf3c-434f-4e12-839a-5ee9cfd30dd8 (entry ${obs.index}): /effectiveDateTime "yesterday" is not a valid FHIR dateTime`,
    );
    const nested = { resourceType: 'Bundle', type: 'collection', entry: [{ resource: { resourceType: 'Patient', gender: 'f' } }] } as fhir4.Resource;
    expect(refusal(() => validateR4([nested]))).to.equal(
      'Bundle (entry 0): /entry/0/resource/gender must be one of "male", "female", "other", "unknown"',
    );
  });

  it('parses and validates the largest fixture (3.8 MB) in well under a second once compiled', () => {
    const body = fixture('synthea/smart-fletcher-hyatt-3794kb.json');
    validateR4(fhirJsonEntries(body));
    const start = performance.now();
    validateR4(fhirJsonEntries(body));
    expect(performance.now() - start).to.be.below(500);
  });
});
