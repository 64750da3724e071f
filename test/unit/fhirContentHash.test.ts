import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { fhirContentHash, importContentKey } from '../../src/domain/fhir/importFhirRecord.js';
import { entriesOfJson, parseNdjsonEntries } from '../../src/domain/fhir/parseFhirBody.js';

describe('FHIR import: fhirContentHash', () => {
  const patient = { resourceType: 'Patient', id: 'p1', gender: 'male', birthDate: '1988-07-07', name: [{ family: 'Ivanov', given: ['Ivan'] }] };
  const observation = {
    resourceType: 'Observation', id: 'o1', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8480-6' }] },
    valueQuantity: { value: 120, unit: 'mm[Hg]' }, subject: { reference: 'urn:uuid:1' },
  };
  const bundle = { resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'urn:uuid:1', resource: patient }, { resource: observation }] };

  it('keeps the digest of the files already stored: imports waiting before a change of its code are still found', () => {
    // Digests made by the first version of the hash (one canonical copy of the whole file, then one text).
    expect(fhirContentHash(entriesOfJson(bundle))).to.equal('99d8c333b035544e4687af70b04e43f89644592a44cb92af3bf032fdfab50847');
    expect(fhirContentHash([])).to.equal(createHash('sha256').update('[]').digest('hex'));
  });

  it('is the same with members in another order at every depth and other blanks', () => {
    const reordered = {
      entry: [
        { resource: Object.fromEntries(Object.entries(patient).reverse()), fullUrl: 'urn:uuid:1' },
        { resource: { ...observation, code: { coding: [{ code: '8480-6', system: 'http://loinc.org' }] }, valueQuantity: { unit: 'mm[Hg]', value: 120 } } },
      ],
      type: 'collection', resourceType: 'Bundle',
    };
    expect(fhirContentHash(entriesOfJson(JSON.parse(JSON.stringify(reordered, null, 2))))).to.equal(fhirContentHash(entriesOfJson(bundle)));
  });

  it('differs for any other value, another fullUrl or another order of the resources', () => {
    const base = fhirContentHash(entriesOfJson(bundle));
    const changed = { ...bundle, entry: [bundle.entry[0], { resource: { ...observation, valueQuantity: { value: 121, unit: 'mm[Hg]' } } }] };
    const otherUrl = { ...bundle, entry: [{ ...bundle.entry[0], fullUrl: 'urn:uuid:2' }, bundle.entry[1]] };
    const swapped = { ...bundle, entry: [...bundle.entry].reverse() };
    for (const other of [changed, otherUrl, swapped]) expect(fhirContentHash(entriesOfJson(other))).to.not.equal(base);
  });

  it('counts a member named __proto__ as a member, so that two files differing only there are two contents', () => {
    const one = parseNdjsonEntries('{"resourceType":"Patient","id":"p1","__proto__":{"x":1}}');
    const other = parseNdjsonEntries('{"resourceType":"Patient","id":"p1","__proto__":{"x":2}}');
    expect(fhirContentHash(one)).to.equal('74251b86ccb3f9ebc0358c3c26ca49a1fb3c7f74820dbc054b6849339e1a0976');
    expect(fhirContentHash(one)).to.not.equal(fhirContentHash(other));
  });

  it('tells the same file apart by the forms hidden from its key, and is the resources\' hash for a key that sees every form', () => {
    const entries = entriesOfJson(bundle);
    expect(importContentKey(entries, new Set())).to.equal(fhirContentHash(entries));
    const blinded = importContentKey(entries, new Set(['lab_hem', 'ip_alloc']));
    expect(blinded).to.match(/^[0-9a-f]{64}$/);
    expect(blinded).to.not.equal(fhirContentHash(entries));
    expect(importContentKey(entries, new Set(['ip_alloc', 'lab_hem'])), 'whatever the order of the forms').to.equal(blinded);
  });
});
