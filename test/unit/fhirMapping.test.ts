/// <reference types="fhir" />
import { readFileSync, readdirSync } from 'node:fs';
import { expect } from 'chai';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { dump, load } from 'js-yaml';
import type { components } from '../../generated/openapi.js';
import { DomainError } from '../../src/domain/errors.js';
import type { FhirEntry } from '../../src/domain/fhir/fhirEntry.js';
import type { FhirImportItem } from '../../src/domain/fhir/fhirImportItem.js';
import { mapToEcrf, type MappingContext, type MappingResult } from '../../src/domain/fhir/mapToEcrf.js';
import { savedValueAt } from '../../src/domain/fhir/itemRecords.js';
import { parseNdjsonEntries } from '../../src/domain/fhir/parseFhirBody.js';
import { fhirJsonEntries } from '../helpers/fhirFiles.js';
import { at } from '../helpers/only.js';
import { checkPatientIdentity } from '../../src/domain/fhir/patientIdentity.js';
import { validateR4 } from '../../src/domain/fhir/validateR4.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';
import type { StoredRecord } from '../../src/domain/stores.js';
import { CASES, type Row } from '../helpers/syntheaCases.js';

const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

const FIXTURES = new URL('../fixtures/fhir/', import.meta.url);
const fixture = (path: string): Buffer => readFileSync(new URL(path, FIXTURES));
const synthea = (file: string): FhirEntry[] => fhirJsonEntries(fixture(`synthea/${file}`));
const hl7 = (...files: string[]): FhirEntry[] =>
  parseNdjsonEntries(files.map((f) => JSON.stringify(JSON.parse(fixture(`hl7-examples/${f}`).toString('utf8')))).join('\n'));

const DEMO_YAML = readFileSync(new URL('../../studies/demo.yaml', import.meta.url), 'utf8');
const demo: StudyDesign = parseStudyDesign(DEMO_YAML);
/** The demo design with one change, for the rules the demo mapping does not exercise. */
function demoWith(change: (design: StudyDesign) => void): StudyDesign {
  const design = parseStudyDesign(DEMO_YAML);
  change(design);
  return design;
}

const nothingSaved: MappingContext['saved'] = () => null;
/** A `saved` look-up over `visit|form|field` → value (instance 1); `marks` are saved not-done marks, such as `[ND]`. */
function savedFrom(values: Record<string, string>, marks: Record<string, string> = {}): MappingContext['saved'] {
  return (visit, instance, form, field) => {
    if (instance !== 1) return undefined;
    const place = `${visit}|${form}|${field}`;
    const value = values[place];
    if (value !== undefined) return { text: value, notDone: false };
    const mark = marks[place];
    return mark === undefined ? undefined : { text: mark, notDone: true };
  };
}

/** Every item of the result, and those of one resource. */
const ofResource = (result: MappingResult, resource: string) => result.items.filter((i) => i.resource === resource);
const place = (i: FhirImportItem) => [i.visit, i.form, i.field, i.resource, i.value];
const isTable = (i: FhirImportItem) => i.row !== null;
const UNIT: Record<string, string> = {
  sbp: 'mm[Hg]', dbp: 'mm[Hg]', hr: '/min', rr: '/min', temp: 'Cel', weight: 'kg', height: 'cm', hgb: 'g/dL', wbc: '10*3/uL',
  plt: '10*3/uL', hct: '%', glucose: 'mmol/L', creat: 'umol/L', chol: 'mmol/L', alt: 'U/L', egfr: 'mL/min/{1.73_m2}',
};

/** The spec's schemas, to check that items can be returned as they are. */
function specValidator(schema: string) {
  const spec = load(readFileSync(new URL('../../spec/openapi.yaml', import.meta.url), 'utf8')) as { components: unknown };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'spec', components: spec.components });
  return ajv.compile({ $ref: `spec#/components/schemas/${schema}` });
}

describe('mapToEcrf', function () {
  // Parsing and validating the larger fixtures takes a few hundred ms each; the first validation compiles.
  this.timeout(30_000);
  const itemValidator = specValidator('FhirImportItem');
  const countsValidator = specValidator('FhirImportCounts');

  /** Checks what every result must satisfy: spec schemas, and counts equal to the items by state. */
  function checkResult(result: MappingResult): void {
    // Compile-time check that the items are the spec's items.
    const wire: components['schemas']['FhirImportItem'][] = result.items;
    const invalid = wire.find((item) => !itemValidator(item));
    expect(invalid, JSON.stringify(itemValidator.errors)).to.equal(undefined);
    expect(countsValidator(result.counts), JSON.stringify(countsValidator.errors)).to.equal(true);
    const by = (state: string) => result.items.filter((i) => i.state === state).length;
    expect(result.counts).to.deep.equal({
      values: result.items.length - by('skipped'),
      conflicts: by('conflict'),
      same: by('same'),
      skipped: by('skipped'),
      saved: 0,
    });
  }

  describe('each Synthea patient with the demo study', () => {
    for (const c of CASES) {
      describe(`${c.file}, enrolled on ${c.enrolledOn}`, () => {
        let entries: FhirEntry[];
        before(() => {
          entries = synthea(c.file);
          validateR4(entries);
          checkPatientIdentity(entries, { subject: '01-001', sex: c.sex, birthYear: c.birthYear });
        });

        it('places vital signs and laboratory values in their visit, converted to the field unit', () => {
          const result = mapToEcrf(entries, demo, { enrolledOn: c.enrolledOn, saved: nothingSaved });
          checkResult(result);
          const placed = result.items.filter((i) => i.state !== 'skipped' && !isTable(i));
          expect(placed.map(place)).to.have.deep.members(c.placed);
          for (const item of placed) {
            expect(item).to.include({ state: 'new', saved_value: null, instance: 1, row: null, reason: null });
            expect(item.unit).to.equal(UNIT[item.field!] ?? null);
          }
          const unconvertible = result.items.filter((i) => i.reason === 'unit_not_convertible');
          expect(unconvertible.map((i) => [i.visit, i.form, i.field, i.resource])).to.have.deep.members(c.unconvertible ?? []);
          for (const item of unconvertible) expect(item).to.include({ value: null, unit: 'mL/min/{1.73_m2}' }).and.nested.include({ 'original.unit': 'mL/min' });
          const notChosen = result.items.filter((i) => i.reason === 'not_chosen').map((i) => i.resource);
          expect(notChosen).to.have.members(c.notChosen ?? []);
        });

        it('marks a value equal to the saved one same (numerically) and a different one conflict', () => {
          const first = at(c.placed, 0, 'the values placed');
          const second = c.placed[1];
          // Written differently but equal as numbers: 81 and "81.0", 185.8 and "185.80".
          const equal = first[4].includes('.') ? `${first[4]}0` : `${first[4]}.0`;
          const saved: Record<string, string> = { [`${first[0]}|${first[1]}|${first[2]}`]: equal };
          if (second) saved[`${second[0]}|${second[1]}|${second[2]}`] = String(Number(second[4]) + 1);
          const result = mapToEcrf(entries, demo, { enrolledOn: c.enrolledOn, saved: savedFrom(saved) });
          checkResult(result);
          const find = (row: Row) => result.items.find((i) => JSON.stringify(place(i)) === JSON.stringify(row));
          expect(find(first)).to.include({ state: 'same', saved_value: equal });
          if (second) expect(find(second)).to.include({ state: 'conflict', saved_value: String(Number(second[4]) + 1) });
          // dm.weight and vs.weight share a value, so a saved vs.weight does not touch dm.weight.
          const others = result.items.filter((i) => i.state !== 'skipped' && !isTable(i) && i !== find(first) && (!second || i !== find(second)));
          for (const item of others) expect(item.state).to.equal('new');
          expect(result.counts.same).to.equal(1);
          expect(result.counts.conflicts).to.equal(second ? 1 : 0);
        });
      });
    }

    it('gives the original value and unit, the effective time in UTC and the matched coding (BP components of 55284-4)', () => {
      const result = mapToEcrf(synthea('smart-buster-hoeger-235kb.json'), demo, { enrolledOn: '2016-12-28', saved: nothingSaved });
      const [dbp, sbp] = ofResource(result, 'Observation/13bfaf3c-434f-4e12-839a-5ee9cfd30dd8');
      expect(sbp?.code).to.deep.equal({ system: 'http://loinc.org', code: '8480-6', display: 'Systolic Blood Pressure' });
      expect(dbp?.code).to.deep.equal({ system: 'http://loinc.org', code: '8462-4', display: 'Diastolic Blood Pressure' });
      expect(sbp?.original).to.deep.equal({ value: '136.48536429185222', unit: 'mm[Hg]' });
      expect(sbp?.effective).to.equal('2016-12-14T13:55:57Z');
      expect(sbp).to.include({ chosen_by: null }).and.to.have.property('candidates').that.deep.equals([]);
    });

    it('places Iris Davis’s haematology of week 4 nowhere: week 4 has no lab_hem form', () => {
      const result = mapToEcrf(synthea('iris-lean-davis-1031kb.json'), demo, { enrolledOn: '2018-03-25', saved: nothingSaved });
      const hem = result.items.filter((i) => ['718-7', '6690-2', '777-3', '4544-3'].includes(i.code.code) && i.effective?.startsWith('2018-04-25'));
      expect(hem).to.have.length(4);
      for (const item of hem) expect(item).to.include({ state: 'skipped', reason: 'no_visit', form: null, visit: null, value: null });
    });

    it('lists the competing temperatures of the Inferno patient on the chosen item', () => {
      const result = mapToEcrf(synthea('inferno-uscore-patient-355-1113kb.json'), demo, { enrolledOn: '2009-08-19', saved: nothingSaved });
      const [temp] = ofResource(result, 'Observation/129b631c-9406-20e5-6903-17101f6e1489');
      expect(temp).to.include({ chosen_by: 'nearest', value: '37.8' });
      expect(temp?.code).to.deep.equal({ system: 'http://loinc.org', code: '8310-5', display: 'Body temperature' });
      expect(temp?.candidates).to.deep.equal([
        { resource: 'Observation/129b631c-9406-20e5-6903-17101f6e1489', value: '37.8', effective: '2009-08-19T23:33:18Z' },
        { resource: 'Observation/2691f7de-5775-428a-9bd8-b28b7d0afd8f', value: '37.8', effective: '2009-08-19T23:33:18Z' },
      ]);
      const [loser] = ofResource(result, 'Observation/2691f7de-5775-428a-9bd8-b28b7d0afd8f');
      expect(loser).to.deep.equal({
        resource: 'Observation/2691f7de-5775-428a-9bd8-b28b7d0afd8f',
        code: { system: 'http://loinc.org', code: '8310-5', display: 'Body temperature' },
        form: null,
        field: null,
        row: null,
        visit: null,
        instance: null,
        value: null,
        unit: null,
        original: { value: '37.799', unit: 'Cel' },
        effective: '2009-08-19T23:33:18Z',
        saved_value: null,
        state: 'skipped',
        reason: 'not_chosen',
        chosen_by: null,
        candidates: [],
      });
    });
  });

  describe('ties, code variants and decimals (issue 24)', () => {
    const glucose = (id: string, value: number, effective: string): fhir4.Observation => ({
      resourceType: 'Observation', id, status: 'final', effectiveDateTime: effective,
      code: { coding: [{ system: 'http://loinc.org', code: '2339-0', display: 'Glucose' }] },
      valueQuantity: { value, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
    });
    // Enrolled 2020-03-15: 2020-03-15 is day 0, baseline.
    const context = { enrolledOn: '2020-03-15', saved: nothingSaved };

    it('makes two different values at the same instant a tie: no value, both candidates, skipped so save mode saves nothing', () => {
      const result = mapToEcrf([glucose('g1', 90, '2020-03-15T08:00:00Z'), glucose('g2', 180, '2020-03-15T08:00:00Z')], demo, context);
      checkResult(result);
      const [tie, other] = result.items;
      expect(tie).to.include({ resource: 'Observation/g1', visit: 'baseline', form: 'lab_chem', field: 'glucose', value: null, state: 'skipped', reason: 'not_chosen', tie: true, chosen_by: null });
      expect(tie?.candidates.map((c) => [c.resource, c.value])).to.deep.equal([['Observation/g1', '5.0'], ['Observation/g2', '10.0']]);
      expect(other).to.include({ resource: 'Observation/g2', form: null, state: 'skipped', reason: 'not_chosen' });
      expect(other).not.to.have.property('tie');
      expect(result.counts).to.include({ values: 0, skipped: 2 });
    });

    it('is a tie for first and last at the same instant, and for date-only values on the same day', () => {
      for (const pick of ['first', 'last'] as const) {
        const design = demoWith((d) => { d.fhir_mapping.observations.find((m) => m.field === 'glucose')!.pick = pick; });
        const result = mapToEcrf([glucose('g1', 90, '2020-03-15'), glucose('g2', 180, '2020-03-15')], design, context);
        expect(result.items[0], pick).to.include({ tie: true, value: null });
      }
    });

    it('is no tie when the values are equal, when the instants differ, or when min/max can choose', () => {
      const equal = mapToEcrf([glucose('g1', 90, '2020-03-15T08:00:00Z'), glucose('g2', 90, '2020-03-15T08:00:00Z')], demo, context);
      expect(equal.items[0]).to.include({ resource: 'Observation/g1', value: '5.0', state: 'new', chosen_by: 'nearest' }).and.not.to.have.property('tie');
      // Equally far from the planned day (day −1 and day 1 around baseline's day 0 would fall outside its
      // window, so: the same day, different times): nearest takes the later measurement.
      const times = mapToEcrf([glucose('g1', 90, '2020-03-15T08:00:00Z'), glucose('g2', 180, '2020-03-15T09:00:00Z')], demo, context);
      expect(times.items.find((i) => i.state === 'new')).to.include({ resource: 'Observation/g2', value: '10.0' });
      const design = demoWith((d) => { d.fhir_mapping.observations.find((m) => m.field === 'glucose')!.pick = 'max'; });
      const max = mapToEcrf([glucose('g1', 90, '2020-03-15T08:00:00Z'), glucose('g2', 180, '2020-03-15T08:00:00Z')], design, context);
      expect(max.items.find((i) => i.state === 'new')).to.include({ resource: 'Observation/g2', chosen_by: 'max' });
    });

    it('gives a tied vital sign its measurement date, so that a pick on the review page passes vsdate_with_values', () => {
      const hr = (id: string, value: number): fhir4.Observation => ({
        resourceType: 'Observation', id, status: 'final', effectiveDateTime: '2020-03-15T08:00:00Z',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
        valueQuantity: { value, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
      });
      const result = mapToEcrf([hr('h1', 70), hr('h2', 96)], demo, context);
      expect(result.items.map((i) => [i.resource, i.field, i.value, i.tie ?? false])).to.deep.equal([
        ['Observation/h1', 'hr', null, true],
        ['Observation/h1', 'vsdate', '2020-03-15', false],
        ['Observation/h2', null, null, false],
      ]);
    });

    it('places haematocrit sent as 20570-8 and writes values with the field\'s decimals', () => {
      const observation = (id: string, code: string, value: number, unit: string): fhir4.Observation => ({
        resourceType: 'Observation', id, status: 'final', effectiveDateTime: '2020-03-15T08:00:00Z',
        code: { coding: [{ system: 'http://loinc.org', code }] },
        valueQuantity: { value, unit, system: 'http://unitsofmeasure.org', code: unit },
      });
      const result = mapToEcrf([
        observation('hct', '20570-8', 42, '%'),
        observation('hgb', '718-7', 14, 'g/dL'),
        observation('chol', '14647-2', 4.7, 'mmol/L'),
      ], demo, context);
      checkResult(result);
      expect(result.items.map((i) => [i.resource, i.field, i.value, i.state])).to.deep.equal([
        ['Observation/hct', 'hct', '42.0', 'new'],
        ['Observation/hgb', 'hgb', '14.0', 'new'],
        ['Observation/chol', 'chol', '4.70', 'new'],
      ]);
    });
  });

  describe('medication status: ended, ongoing, entered in error (issue 24)', () => {
    const request = (id: string, status: fhir4.MedicationRequest['status'], validityEnd?: string): fhir4.MedicationRequest => ({
      resourceType: 'MedicationRequest', id, status, intent: 'order', subject: { reference: 'Patient/p' }, authoredOn: '2016-05-02',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '834061', display: 'Penicillin V Potassium 250 MG' }] },
      ...(validityEnd ? { dispenseRequest: { validityPeriod: { start: '2016-05-02', end: validityEnd } } } : {}),
    });
    const statement = (id: string, status: fhir4.MedicationStatement['status'], end?: string): fhir4.MedicationStatement => ({
      resourceType: 'MedicationStatement', id, status, subject: { reference: 'Patient/p' },
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197361', display: 'Amlodipine 5 MG' }] },
      effectivePeriod: { start: '2017-01-10', ...(end ? { end } : {}) },
    });
    const cells = (result: MappingResult, resource: string) =>
      ofResource(result, resource).filter((i) => i.field === 'medications.stop' || i.field === 'medications.ongoing').map((i) => [i.field, i.value]);

    it('marks the stop date UNK for a stopped or completed medication without an end, and keeps an active one open', () => {
      const result = mapToEcrf([
        request('stopped', 'stopped'),
        request('completed', 'completed', '2016-05-12'),
        request('active', 'active'),
        statement('taken-until', 'completed'),
        statement('stopped-at', 'stopped', '2017-03-01'),
        request('error', 'entered-in-error'),
        statement('error2', 'entered-in-error'),
      ], demo, { enrolledOn: '2018-04-01', saved: nothingSaved });
      checkResult(result);
      expect(cells(result, 'MedicationRequest/stopped')).to.deep.equal([['medications.stop', 'UNK'], ['medications.ongoing', 'no']]);
      expect(cells(result, 'MedicationRequest/completed')).to.deep.equal([['medications.stop', '2016-05-12'], ['medications.ongoing', 'no']]);
      expect(cells(result, 'MedicationRequest/active')).to.deep.equal([['medications.ongoing', 'yes']]);
      expect(cells(result, 'MedicationStatement/taken-until')).to.deep.equal([['medications.stop', 'UNK'], ['medications.ongoing', 'no']]);
      expect(cells(result, 'MedicationStatement/stopped-at')).to.deep.equal([['medications.stop', '2017-03-01'], ['medications.ongoing', 'no']]);
      expect(ofResource(result, 'MedicationRequest/error')).to.deep.equal([]);
      expect(ofResource(result, 'MedicationStatement/error2')).to.deep.equal([]);
      expect(result.items.filter((i) => i.field === 'medications.stop').every((i) => i.state === 'new' && i.visit === 'screening')).to.equal(true);
    });

    it('reads the Medication an absolute medicationReference names only from the same server', () => {
      const amlodipine: fhir4.Medication = { resourceType: 'Medication', id: 'm1', code: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '197361', display: 'Amlodipine 5 MG' }] } };
      const ordering = (id: string, reference: string): FhirEntry => ({
        resource: { ...request(id, 'active'), medicationCodeableConcept: undefined, medicationReference: { reference, display: 'as the order names it' } } as fhir4.MedicationRequest,
        index: 1,
      });
      const codeOf = (order: FhirEntry) => {
        const result = mapToEcrf([{ fullUrl: 'http://hospital-a.example/fhir/Medication/m1', resource: amlodipine, index: 0 }, order], demo, { enrolledOn: '2018-04-01', saved: nothingSaved });
        return ofResource(result, `MedicationRequest/${order.resource.id}`)[0]?.code;
      };
      expect(codeOf(ordering('same', 'http://hospital-a.example/fhir/Medication/m1/_history/3'))?.code).to.equal('197361');
      expect(codeOf(ordering('other', 'http://hospital-b.example/fhir/Medication/m1'))).to.deep.include({ code: '', display: 'as the order names it' });
    });
  });

  describe('pick rules (Stewart Stanton enrolled 1967-02-11: creatinine on 1967-01-23, day −19, and 01-28, day −14, both in screening)', () => {
    const early = 'Observation/c0b63ac8-94c6-4620-a5ea-67dac09527b3'; // 2.550326777314372 mg/dL → 225 µmol/L
    const late = 'Observation/25d69710-5f56-4e7c-ac5c-e9cf96f85aa4'; // 1.5926808075595946 mg/dL → 141 µmol/L
    let entries: FhirEntry[];
    before(() => {
      entries = synthea('smart-stewart-stanton-1942kb.json');
    });
    const rules: ['nearest' | 'first' | 'last' | 'min' | 'max', string, string, string][] = [
      ['nearest', late, '141', 'day −14 is the planned day of screening'],
      ['first', early, '225', 'the earlier'],
      ['last', late, '141', 'the later'],
      ['min', late, '141', 'the lower value'],
      ['max', early, '225', 'the higher value'],
    ];
    for (const [pick, winner, value, why] of rules) {
      it(`${pick} chooses ${why}`, () => {
        const design = demoWith((d) => {
          d.fhir_mapping.observations.find((m) => m.field === 'creat')!.pick = pick;
        });
        const result = mapToEcrf(entries, design, { enrolledOn: '1967-02-11', saved: nothingSaved });
        checkResult(result);
        const chosen = result.items.filter((i) => i.field === 'creat' && i.state === 'new');
        expect(chosen).to.have.length(1);
        expect(chosen[0]).to.include({ resource: winner, value, visit: 'screening', chosen_by: pick });
        const loser = winner === early ? late : early;
        expect(chosen[0]?.candidates.map((c) => [c.resource, c.value])).to.deep.equal([
          [winner, value],
          [loser, value === '141' ? '225' : '141'],
        ]);
        expect(ofResource(result, loser)).to.have.length(1);
        expect(ofResource(result, loser)[0]).to.include({ state: 'skipped', reason: 'not_chosen' });
      });
    }

    it('a value chosen for one place and not another keeps only its placed item (weight on dm and vs)', () => {
      // Weight of 1967-01-28 only: one observation, two places, no competition.
      const result = mapToEcrf(entries, demo, { enrolledOn: '1967-02-11', saved: nothingSaved });
      const weight = ofResource(result, 'Observation/45d56b58-4550-41eb-80ea-0453e4d9de95');
      expect(weight.map((i) => [i.form, i.field, i.value])).to.deep.equal([
        ['vs', 'weight', '78.9'],
        ['dm', 'weight', '78.9'],
        ['vs', 'vsdate', '1967-01-28'],
      ]);
    });
  });

  it('gives no place on a form missing from the design it is given (a form the key may not see): no_mapping', () => {
    const design = demoWith((d) => {
      d.forms = d.forms.filter((f) => f.code !== 'lab_chem');
    });
    const result = mapToEcrf(synthea('smart-emery-purdy-897kb.json'), design, { enrolledOn: '2019-01-11', saved: nothingSaved });
    const [glucose] = ofResource(result, 'Observation/29745716-813c-4b3c-a820-72d11270b869');
    expect(glucose).to.include({ state: 'skipped', reason: 'no_mapping', form: null });
    expect(ofResource(result, 'Observation/a7c78a2c-9dcd-4f03-9b15-c7b72c53ad75')[0]).to.include({ form: 'lab_hem', value: '15.3' });
  });

  describe('visit windows', () => {
    it('places nothing outside the windows and never in the repeating unscheduled visit', () => {
      // Emery Purdy's encounter of 2019-01-11 is day 10 when enrolled on 2019-01-01: between baseline and week 4.
      const result = mapToEcrf(synthea('smart-emery-purdy-897kb.json'), demo, { enrolledOn: '2019-01-01', saved: nothingSaved });
      expect(result.items.filter((i) => i.state !== 'skipped' && !isTable(i))).to.deep.equal([]);
      const [dbp, sbp] = ofResource(result, 'Observation/518e1b27-76c0-4ac4-a959-23e2424309c6');
      expect(sbp).to.include({ reason: 'no_visit', state: 'skipped', visit: null, value: null });
      expect(dbp).to.include({ reason: 'no_visit' });
    });

    it('centres a visit window on the date already recorded for the visit', () => {
      const result = mapToEcrf(synthea('smart-emery-purdy-897kb.json'), demo, {
        enrolledOn: '2019-01-01',
        recordedVisitDates: { baseline: '2019-01-11' },
        saved: nothingSaved,
      });
      const [, sbp] = ofResource(result, 'Observation/518e1b27-76c0-4ac4-a959-23e2424309c6');
      expect(sbp).to.include({ visit: 'baseline', form: 'vs', field: 'sbp', value: '168', state: 'new' });
    });

    it('counts the day in the sender’s time zone, not in UTC', () => {
      // 2026-03-09T01:30+03:00 is 8 March in UTC but 9 March at the hospital: baseline day 0, not day −1.
      const obs = {
        resourceType: 'Observation',
        id: 'hr',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
        effectiveDateTime: '2026-03-09T01:30:00+03:00',
        valueQuantity: { value: 76, system: 'http://unitsofmeasure.org', code: '/min' },
      } as fhir4.Observation;
      const [item] = mapToEcrf([obs], demo, { enrolledOn: '2026-03-09', saved: nothingSaved }).items;
      expect(item).to.include({ visit: 'baseline', field: 'hr', value: '76', effective: '2026-03-08T22:30:00Z' });
    });
  });

  describe('a saved not-done mark', () => {
    // The heart rate made a text field, so that a file can bring the text "[ND]" where the mark ND is saved.
    const textDesign = demoWith((d) => {
      const vs = d.forms.find((f) => f.code === 'vs')!;
      const index = vs.fields.findIndex((f) => f.code === 'hr');
      vs.fields[index] = { code: 'hr', label: 'Heart rate note', type: 'text', required: false };
    });
    const note = {
      resourceType: 'Observation', id: 'hr', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
      effectiveDateTime: '2026-03-09T10:00:00Z', valueString: '[ND]',
    } as fhir4.Observation;
    const hrOf = (saved: MappingContext['saved']) => mapToEcrf([note], textDesign, { enrolledOn: '2026-03-09', saved }).items.find((i) => i.field === 'hr');

    it('is never the same as a value of the file, even one written like it', () => {
      expect(hrOf(savedFrom({}, { 'baseline|vs|hr': '[ND]' }))).to.include({ value: '[ND]', saved_value: '[ND]', state: 'conflict' });
    });

    it('is not confused with a saved text written like a mark', () => {
      expect(hrOf(savedFrom({ 'baseline|vs|hr': '[ND]' }))).to.include({ value: '[ND]', saved_value: '[ND]', state: 'same' });
    });

    it('is told from a text by the look-up over saved records', () => {
      const record = (values: StoredRecord['values'], notDone: StoredRecord['notDone']): StoredRecord => ({
        id: 1, patientId: 1, visitId: 1, instance: 1, formId: 1, status: 'complete', values, notDone, tables: { mh: [{ term: '[ND]' }] },
      });
      expect(savedValueAt(record({}, { hr: 'ND' }), 'hr', null)).to.deep.equal({ text: '[ND]', notDone: true });
      expect(savedValueAt(record({ hr: '[ND]' }, {}), 'hr', null)).to.deep.equal({ text: '[ND]', notDone: false });
      expect(savedValueAt(record({}, {}), 'mh.term', 0)).to.deep.equal({ text: '[ND]', notDone: false });
      expect(savedValueAt(record({ hr: '' }, {}), 'hr', null)).to.equal(null);
    });
  });

  describe('measurement dates (date_field)', () => {
    /** An Observation of the demo's vital signs, in the UCUM unit of its field. */
    const vital = (id: string, loinc: string, value: number, unit: string, effectiveDateTime: string) => ({
      resourceType: 'Observation',
      id,
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: loinc }] },
      effectiveDateTime,
      valueQuantity: { value, system: 'http://unitsofmeasure.org', code: unit },
    }) as fhir4.Observation;
    // Enrolled 2026-03-09: baseline covers days 0…3, so 9 and 11 March both fall into it.
    const heartRate = vital('hr', '8867-4', 76, '/min', '2026-03-09T23:30:00+03:00');
    const weight = vital('wt', '29463-7', 80, 'kg', '2026-03-11T08:00:00+03:00');
    const dateOf = (result: MappingResult) => result.items.filter((i) => i.field === 'vsdate');

    it('fills the form’s date field with the chosen value’s day in the sender’s time zone', () => {
      const result = mapToEcrf([heartRate], demo, { enrolledOn: '2026-03-09', saved: nothingSaved });
      checkResult(result);
      expect(dateOf(result)).to.deep.equal([{
        resource: 'Observation/hr', code: { system: 'http://loinc.org', code: '8867-4', display: null }, form: 'vs', field: 'vsdate', row: null,
        visit: 'baseline', instance: 1, value: '2026-03-09', unit: null, original: { value: '2026-03-09T23:30:00+03:00', unit: null },
        effective: '2026-03-09T20:30:00Z', saved_value: null, state: 'new', reason: null, chosen_by: null, candidates: [],
      }]);
    });

    it('takes the day nearest to the planned day when the form’s values were measured on different days, listing them all', () => {
      const result = mapToEcrf([weight, heartRate], demo, { enrolledOn: '2026-03-09', saved: nothingSaved });
      checkResult(result);
      const [date] = dateOf(result);
      expect(date).to.include({ resource: 'Observation/hr', value: '2026-03-09', chosen_by: 'nearest', state: 'new' });
      expect(date?.candidates).to.deep.equal([
        { resource: 'Observation/hr', value: '2026-03-09', effective: '2026-03-09T20:30:00Z' },
        { resource: 'Observation/wt', value: '2026-03-11', effective: '2026-03-11T05:00:00Z' },
      ]);
      expect(result.items.filter((i) => i.state !== 'skipped').map((i) => [i.resource, i.form, i.field])).to.deep.equal([
        ['Observation/wt', 'vs', 'weight'],
        ['Observation/hr', 'vs', 'hr'],
        ['Observation/hr', 'vs', 'vsdate'],
      ]);
    });

    it('compares the date with the saved one: same, or conflict', () => {
      const same = mapToEcrf([heartRate], demo, { enrolledOn: '2026-03-09', saved: savedFrom({ 'baseline|vs|vsdate': '2026-03-09' }) });
      expect(dateOf(same)[0]).to.include({ state: 'same', saved_value: '2026-03-09' });
      const conflict = mapToEcrf([heartRate], demo, { enrolledOn: '2026-03-09', saved: savedFrom({ 'baseline|vs|vsdate': '2026-03-10' }) });
      expect(dateOf(conflict)[0]).to.include({ state: 'conflict', saved_value: '2026-03-10', value: '2026-03-09' });
      expect(conflict.counts).to.deep.equal({ values: 2, conflicts: 1, same: 0, skipped: 0, saved: 0 });
    });

    it('gives no date without date_field, and none for a value that found no place', () => {
      const design = demoWith((d) => d.fhir_mapping.observations.forEach((o) => delete o.date_field));
      expect(dateOf(mapToEcrf([heartRate], design, { enrolledOn: '2026-03-09', saved: nothingSaved }))).to.deep.equal([]);
      // Day 10 lies between baseline and week 4.
      expect(dateOf(mapToEcrf([heartRate], demo, { enrolledOn: '2026-02-27', saved: nothingSaved }))).to.deep.equal([]);
    });

    describe('design checks', () => {
      /** The members of the demo design these cases edit; the rest passes through as it is. */
      interface MappedDesign { fhir_mapping: { observations: Record<string, unknown>[] } }
      const firstObservation = (d: MappedDesign) => at(d.fhir_mapping.observations, 0, 'the observation mappings');
      const invalid: { name: string; change: (d: MappedDesign) => void; code: string }[] = [
        { name: 'a date_field that is not on the form', change: (d) => { firstObservation(d).date_field = 'nope'; }, code: 'unknown_field' },
        { name: 'a date_field that is not a date', change: (d) => { firstObservation(d).date_field = 'rr'; }, code: 'field_type_mismatch' },
        {
          name: 'a date_field that a mapping also fills as a value',
          change: (d) => {
            d.fhir_mapping.observations.slice(1).forEach((o) => delete o.date_field);
            d.fhir_mapping.observations.push({ codes: [{ system: 'http://loinc.org', code: '1-1' }], form: 'vs', field: 'vsdate' });
          },
          code: 'date_field_mapped',
        },
        { name: 'a date_field that is not a code', change: (d) => { firstObservation(d).date_field = 'Vs Date'; }, code: 'schema' },
      ];
      for (const { name, change, code } of invalid) {
        it(`refuses ${name}`, () => {
          const doc = load(DEMO_YAML) as MappedDesign;
          change(doc);
          const error = (() => { try { parseStudyDesign(dump(doc)); } catch (e) { return e as DomainError; } })();
          expect(error).to.be.instanceOf(DomainError);
          expect(error!.fieldErrors.map((e) => [e.pointer, e.code])).to.deep.equal([['/fhir_mapping/observations/0/date_field', code]]);
        });
      }
    });
  });

  describe('HL7 example resources', () => {
    it('converts vital signs: [in_i] to cm, Cel, /min; a BMI has no mapping and a panel of members no value', () => {
      const entries = hl7(
        'observation-example-body-height.json',
        'observation-example-body-temperature.json',
        'observation-example-heart-rate.json',
        'observation-example-respiratory-rate.json',
        'observation-example-bmi.json',
        'observation-example-vitals-panel.json',
      );
      // All measured 1999-07-02: day −14 when enrolled on 1999-07-16, so screening (with dm and vs).
      const result = mapToEcrf(entries, demo, { enrolledOn: '1999-07-16', saved: nothingSaved });
      checkResult(result);
      expect(result.items.map((i) => [i.resource, i.form, i.field, i.value, i.reason])).to.deep.equal([
        ['Observation/body-height', 'dm', 'height', '169.9', null], // 66.89999999999999 [in_i] × 2.54 = 169.926 cm
        ['Observation/body-temperature', 'vs', 'temp', '36.5', null],
        // Three vital signs of one day: the date goes with the first of them in the file.
        ['Observation/body-temperature', 'vs', 'vsdate', '1999-07-02', null],
        ['Observation/heart-rate', 'vs', 'hr', '44', null],
        ['Observation/respiratory-rate', 'vs', 'rr', '26', null],
        ['Observation/bmi', null, null, null, 'no_mapping'],
      ]);
      expect(result.items[5]?.code).to.deep.equal({ system: 'http://loinc.org', code: '39156-5', display: 'Body mass index (BMI) [Ratio]' });
    });

    it('converts a weight in pounds to kg (185 [lb_av] → 83.9 kg)', () => {
      const [item] = mapToEcrf(hl7('observation-example.json'), demo, { enrolledOn: '2016-03-28', saved: nothingSaved }).items;
      expect(item).to.include({ visit: 'baseline', form: 'vs', field: 'weight', value: '83.9', unit: 'kg' });
      expect(item?.original).to.deep.equal({ value: '185', unit: '[lb_av]' });
      // The first of its four codings is the one mapped; a display is never matched.
      expect(item?.code).to.deep.equal({ system: 'http://loinc.org', code: '29463-7', display: 'Body Weight' });
    });

    it('takes blood pressure from panel components, skips absent and cancelled values, and lets two panels compete', () => {
      const entries = hl7(
        'observation-example-bloodpressure.json',
        'observation-example-bloodpressure-dar.json',
        'observation-example-bloodpressure-cancel.json',
      );
      const result = mapToEcrf(entries, demo, { enrolledOn: '2012-09-17', saved: savedFrom({ 'baseline|vs|dbp': '60' }) });
      checkResult(result);
      expect(result.items.map((i) => [i.resource, i.code.code, i.field, i.value, i.state, i.reason, i.chosen_by])).to.deep.equal([
        ['Observation/blood-pressure', '8480-6', 'sbp', '107', 'new', null, 'nearest'],
        // The measurement date joins the value it came with: here the systolic component.
        ['Observation/blood-pressure', '8480-6', 'vsdate', '2012-09-17', 'new', null, null],
        ['Observation/blood-pressure', '8462-4', 'dbp', '60', 'same', null, null],
        // Same day as the first panel: equal rank, so the first in the file is chosen.
        ['Observation/blood-pressure-dar', '8480-6', null, null, 'skipped', 'not_chosen', null],
      ]);
      expect(result.counts).to.deep.equal({ values: 3, conflicts: 0, same: 1, skipped: 1, saved: 0 });
    });

    it('maps laboratory examples: mmol/L glucose as is, a local code has no mapping, eGFR (MDRD variants) from components', () => {
      const entries = hl7(
        'observation-example-f001-glucose.json',
        'observation-example-f005-hemoglobin.json',
        'observation-example-f204-creatinine.json',
        'observation-example-f205-egfr.json',
      );
      const result = mapToEcrf(entries, demo, { enrolledOn: '2013-04-02', saved: nothingSaved });
      checkResult(result);
      expect(result.items.map((i) => [i.resource, i.code.code, i.visit, i.field, i.value, i.original.value, i.original.unit, i.reason])).to.deep.equal([
        ['Observation/f001', '15074-8', 'baseline', 'glucose', '6.3', '6.3', 'mmol/L', null],
        ['Observation/f005', '718-7', 'baseline', 'hgb', '7.2', '7.2', 'g/dL', null],
        ['Observation/f204', '20005', null, null, null, '122', 'umol/L', 'no_mapping'],
        // 48643-1 and 48642-3 are eGFR variants the demo mapping lists; ">60" is no number.
        ['Observation/f205', '48643-1', 'baseline', 'egfr', null, '>60', 'mL/min/{1.73_m2}', 'invalid'],
        ['Observation/f205', '48642-3', 'baseline', 'egfr', '60', '60', 'mL/min/{1.73_m2}', null],
      ]);
      // effectivePeriod.start, in UTC.
      expect(result.items[0]?.effective).to.equal('2013-04-02T08:30:10Z');
    });

    it('refuses a unit in another code system and a quantity with a comparator for numeric fields', () => {
      const design = demoWith((d) => {
        d.fhir_mapping.observations.push({ codes: [{ system: 'https://intranet.aumc.nl/labtestcodes', code: '20005' }], form: 'lab_chem', field: 'creat', pick: 'nearest', molar_mass: 113.12 });
      });
      const result = mapToEcrf(hl7('observation-example-f204-creatinine.json', 'observation-example-f205-egfr.json'), design, {
        enrolledOn: '2013-04-04',
        saved: nothingSaved,
      });
      expect(result.items.map((i) => [i.resource, i.field, i.reason, i.unit])).to.deep.equal([
        ['Observation/f204', 'creat', 'unit_not_convertible', 'umol/L'], // unit coded in SNOMED CT (258814008)
        ['Observation/f205', 'egfr', 'invalid', 'mL/min/{1.73_m2}'], // "> 60" cannot be written as a number
        ['Observation/f205', 'egfr', null, 'mL/min/{1.73_m2}'], // the panel's other eGFR, 60
      ]);
    });
  });

  describe('non-numeric fields (Inferno values: valueString, valueBoolean, valueCodeableConcept)', () => {
    const design = parseStudyDesign(`
code: T1
name: Values
sites: [{number: "01", name: Site}]
visits:
  - {code: all, name: All, planned_day: 0, window: {before: 40000, after: 40000}, forms: [x]}
forms:
  - code: x
    name: X
    fields:
      - {code: smoking, label: Smoking, type: choice, options: [{code: "266919005", label: Never smoked}, {code: "8517006", label: Ex-smoker}]}
      - {code: smoking_yn, label: Smoking y/n, type: choice, options: [{code: "1", label: Yes}, {code: "2", label: No}]}
      - {code: jail, label: Jail, type: yesno}
      - {code: labour, label: Not in labour force, type: yesno}
      - {code: impression, label: Impression, type: text}
      - {code: ekg, label: EKG, type: text}
      - {code: ekg_date, label: EKG date, type: date}
fhir_mapping:
  observations:
    - {codes: [{system: "http://loinc.org", code: "72166-2"}], form: x, field: smoking}
    - {codes: [{system: "http://loinc.org", code: "72166-2"}], form: x, field: smoking_yn}
    - {codes: [{system: "http://loinc.org", code: "93028-9"}], form: x, field: jail}
    - {codes: [{system: "http://snomed.info/sct", code: "741062008"}], form: x, field: labour}
    - {codes: [{system: "http://loinc.org", code: "19005-8"}], form: x, field: impression}
    - {codes: [{system: "http://loinc.org", code: "8601-7"}], form: x, field: ekg}
    - {codes: [{system: "http://loinc.org", code: "8601-7"}], form: x, field: ekg_date}
`);
    let result: MappingResult;
    before(() => {
      result = mapToEcrf(synthea('inferno-uscore-patient-355-1113kb.json'), design, { enrolledOn: '2000-01-01', saved: nothingSaved });
    });

    it('passes the spec schemas', () => checkResult(result));

    it('takes a coded value into a choice only when its code is an option, nearest to the planned day', () => {
      const smoking = result.items.filter((i) => i.field === 'smoking' && i.state === 'new');
      expect(smoking).to.have.length(1);
      // 2000-06-22 is 173 days from 2000-01-01, 1999-06-17 is 198 days.
      expect(smoking[0]).to.include({ resource: 'Observation/7f08483d-63cc-811f-6910-f6eb34153aca', value: '266919005', chosen_by: 'nearest' });
      expect(smoking[0]?.candidates).to.have.length(95);
      // The one coded with a data-absent reason ("unknown") is not an option.
      expect(ofResource(result, 'Observation/405f9fe5-4ca1-4beb-a946-60774e6878cf').map((i) => [i.field, i.reason])).to.deep.equal([
        ['smoking', 'invalid'],
        ['smoking_yn', 'invalid'],
      ]);
      // Never an option of smoking_yn: every smoking status is invalid there.
      expect(result.items.filter((i) => i.field === 'smoking_yn').every((i) => i.reason === 'invalid')).to.equal(true);
      expect(result.items.filter((i) => i.field === 'smoking_yn')).to.have.length(96);
    });

    it('takes valueString "No" and valueBoolean true into yes/no fields, text as is, a concept’s display as text', () => {
      const by = (resource: string) => ofResource(result, resource).map((i) => [i.field, i.value, i.reason, i.original.value]);
      expect(by('Observation/d1ee0707-00f8-462c-aca3-63cf6dd1be82')).to.deep.equal([['jail', 'no', null, 'No']]);
      expect(by('Observation/0d075e25-365e-4dcf-863d-e2b814e52de2')).to.deep.equal([['labour', 'yes', null, 'true']]);
      expect(by('Observation/a4c9c602-60a6-11ed-9b6a-0242ac120002')).to.deep.equal([['impression', 'No acute abnormality', null, 'No acute abnormality']]);
      expect(by('Observation/1546a198-6098-11ed-9b6a-0242ac120002')).to.deep.equal([
        ['ekg', 'Normal sinus rhythm', null, '64730000'],
        ['ekg_date', null, 'invalid', '64730000'],
      ]);
      expect(ofResource(result, 'Observation/1546a198-6098-11ed-9b6a-0242ac120002')[0]?.effective).to.equal('2021-11-11T00:48:57.246Z');
    });

    it('gives Observations without a value no item (80954-1 has neither value nor effective)', () => {
      expect(ofResource(result, 'Observation/425033f2-6098-11ed-9b6a-0242ac120002')).to.deep.equal([]);
      expect(ofResource(result, 'Observation/9659d9e0-60a6-11ed-9b6a-0242ac120002')).to.deep.equal([]);
    });
  });

  describe('conditions and medications into table fields', () => {
    let entries: FhirEntry[];
    before(() => {
      entries = synthea('smart-fletcher-hyatt-3794kb.json');
    });

    it('puts Fletcher Hyatt’s medical history in screening, one row per Condition and one item per cell', () => {
      const result = mapToEcrf(entries, demo, { enrolledOn: '1992-12-05', saved: nothingSaved });
      checkResult(result);
      const mh = result.items.filter((i) => i.form === 'mh');
      // 13 Conditions with onset before enrolment; of the 7 that begin after it, 2 (fractures on
      // 1993-01-12, day 38, after week 4's window) are adverse-event candidates at week 12, the next visit
      // with the ae form, and 5 (lung cancer…) begin after the last ae window.
      expect(new Set(mh.map((i) => i.row))).to.have.property('size', 13);
      expect(mh.every((i) => i.visit === 'screening' && i.instance === 1 && i.state === 'new')).to.equal(true);
      expect(ofResource(result, 'Condition/1905b4a4-66e1-4d63-afad-968ce206c983').map((i) => [i.field, i.row, i.value, i.original.value])).to.deep.equal([
        ['conditions.term', 0, 'Hypertension', 'Hypertension'],
        ['conditions.code', 0, '38341003', '38341003'],
        ['conditions.onset', 0, '1934-01-13', '1934-01-13T19:20:06+00:00'],
        ['conditions.ongoing', 0, 'yes', 'true'],
      ]);
      const lateConditions = result.items.filter((i) => i.resource.startsWith('Condition/') && i.reason === 'no_visit');
      expect(lateConditions.map((i) => i.code.code)).to.deep.equal(['162573006', '254637007', '424132000', '10509002', '88805009']);
      const candidates = result.items.filter((i) => i.resource.startsWith('Condition/') && i.form === 'ae');
      expect(candidates.map((i) => [i.code.code, i.visit, i.field, i.row, i.value, i.state])).to.deep.equal([
        ['263102004', 'week12', 'events.term', 0, 'Fracture subluxation of wrist', 'new'],
        ['263102004', 'week12', 'events.onset', 0, '1993-01-12', 'new'],
        ['443165006', 'week12', 'events.term', 1, 'Pathological fracture due to osteoporosis (disorder)', 'new'],
        ['443165006', 'week12', 'events.onset', 1, '1993-01-12', 'new'],
      ]);
      expect(result.items.filter((i) => i.form === 'mh').every((i) => i.code.code !== '263102004' && i.code.code !== '443165006')).to.equal(true);
    });

    it('puts medications started before enrolment in screening and later ones at the next visit with the cm form', () => {
      const result = mapToEcrf(entries, demo, { enrolledOn: '1992-12-05', saved: nothingSaved });
      const rowsAt = (visit: string) => new Set(result.items.filter((i) => i.form === 'cm' && i.visit === visit).map((i) => i.resource)).size;
      expect([rowsAt('screening'), rowsAt('week4'), rowsAt('week12')]).to.deep.equal([37, 1, 1]);
      expect(ofResource(result, 'MedicationRequest/dd954eae-3806-41f7-8366-66d2b0530b70').map((i) => [i.visit, i.field, i.row, i.value])).to.deep.equal([
        ['screening', 'medications.name', 0, 'Hydrochlorothiazide 25 MG'],
        ['screening', 'medications.code', 0, '316049'],
        ['screening', 'medications.start', 0, '1934-01-13'],
        ['screening', 'medications.ongoing', 0, 'yes'], // active, no end date
      ]);
      // Started 1993-01-01 (day 27, in the week 4 window) and 1993-01-12 (day 38, between week 4 and week 12).
      expect(ofResource(result, 'MedicationRequest/45622f4c-99be-4652-8f78-e45db28ae4f7')[0]).to.include({ visit: 'week4', row: 0 });
      expect(ofResource(result, 'MedicationRequest/458a9e91-bf81-4882-bc26-ae427b5464dd')[0]).to.include({ visit: 'week12', row: 0 });
      // 83 prescriptions begin after the week 12 window.
      expect(result.items.filter((i) => i.resource.startsWith('MedicationRequest/') && i.reason === 'no_visit')).to.have.length(83);
    });

    it('matches a saved row by code: same and conflicting cells; other rows are appended after the saved ones', () => {
      const saved = savedFrom({
        'screening|mh|conditions[0].term': 'Arterial hypertension',
        'screening|mh|conditions[0].code': '38341003',
        'screening|mh|conditions[0].onset': '1934-01-13',
        'screening|mh|conditions[1].term': 'Asthma',
      });
      const result = mapToEcrf(entries, demo, { enrolledOn: '1992-12-05', saved });
      checkResult(result);
      expect(ofResource(result, 'Condition/1905b4a4-66e1-4d63-afad-968ce206c983').map((i) => [i.field, i.row, i.state, i.saved_value])).to.deep.equal([
        ['conditions.term', 0, 'conflict', 'Arterial hypertension'],
        ['conditions.code', 0, 'same', '38341003'],
        ['conditions.onset', 0, 'same', '1934-01-13'],
        ['conditions.ongoing', 0, 'new', null],
      ]);
      const rows = result.items.filter((i) => i.form === 'mh' && i.resource !== 'Condition/1905b4a4-66e1-4d63-afad-968ce206c983').map((i) => i.row!);
      expect(Math.min(...rows)).to.equal(2);
      expect(Math.max(...rows)).to.equal(13);
    });

    it('reads HL7 conditions and medication statements: text-only codes, contained and external Medications, ignored statuses', () => {
      const result = mapToEcrf(
        hl7(
          'condition-example.json',
          'condition-example2.json',
          'medicationrequestexample1.json',
          'medicationrequestexample2.json',
          'medicationstatementexample1.json',
          'medicationstatementexample3.json',
          'medicationstatementexample4.json',
          'medicationstatementexample5.json',
        ),
        demo,
        { enrolledOn: '2016-06-01', saved: nothingSaved },
      );
      checkResult(result);
      const cells = (resource: string) => ofResource(result, resource).map((i) => [i.field, i.row, i.value, i.reason]);
      expect(cells('Condition/example')).to.deep.equal([
        ['conditions.term', 0, 'Burn of ear', null], // the SNOMED CT coding's display (its text is "Burnt Ear")
        ['conditions.code', 0, '39065001', null],
        ['conditions.onset', 0, '2012-05-24', null],
        ['conditions.ongoing', 0, 'yes', null],
      ]);
      // Text only: no code cell, and "approximately November 2012" is no date.
      expect(cells('Condition/example2')).to.deep.equal([
        ['conditions.term', 1, 'Asthma', null],
        ['conditions.onset', 1, null, 'invalid'],
        ['conditions.ongoing', 1, 'yes', null],
      ]);
      expect(ofResource(result, 'Condition/example2')[0]?.code).to.deep.equal({ system: '', code: '', display: 'Asthma' });
      // Contained Medication coded in SNOMED CT only: a name but no RxNorm/ATC code.
      expect(cells('MedicationRequest/medrx0311')).to.deep.equal([
        ['medications.name', 0, 'Chlorthalidone 50mg tablet (product)', null],
        ['medications.start', 0, '2015-01-15', null],
        ['medications.stop', 0, '2016-01-15', null],
        ['medications.ongoing', 0, 'no', null],
      ]);
      // A Medication outside the file: only the reference's display.
      expect(cells('MedicationRequest/medrx002')[0]).to.deep.equal(['medications.name', 1, 'prescribed medication', null]);
      expect(cells('MedicationStatement/example001')[0]).to.deep.equal(['medications.name', 2, 'Tylenol PM', null]);
      expect(cells('MedicationStatement/example003')[0]).to.deep.equal(['medications.name', 3, 'Little Pink Pill for water retention', null]);
      expect(cells('MedicationStatement/example004')[0]).to.deep.equal(['medications.name', 4, 'Amoxicillin (product)', null]);
      // Entered in error: states nothing about the patient.
      expect(cells('MedicationStatement/example005')).to.deep.equal([]);
    });

    it('lists a Condition without a mapping as one skipped item', () => {
      const design = demoWith((d) => {
        d.fhir_mapping.conditions = [];
      });
      const result = mapToEcrf(hl7('condition-example.json'), design, { enrolledOn: '2016-06-01', saved: nothingSaved });
      expect(result.items.map((i) => [i.resource, i.code.code, i.reason, i.original.value, i.effective])).to.deep.equal([
        ['Condition/example', '39065001', 'no_mapping', 'Burnt Ear', '2012-05-24'],
      ]);
    });
  });

  describe('every fixture', () => {
    for (const file of readdirSync(new URL('synthea/', FIXTURES)).sort()) {
      it(`maps synthea/${file} within the spec's schemas`, () => {
        const entries = synthea(file);
        checkResult(mapToEcrf(entries, demo, { enrolledOn: '2000-01-01', saved: () => ({ text: '1', notDone: false }) }));
      });
    }

    it('parses, validates, checks and maps the largest fixture (3.8 MB) in well under a second', () => {
      const body = fixture('synthea/smart-fletcher-hyatt-3794kb.json');
      validateR4(fhirJsonEntries(body)); // compiled before timing
      const start = performance.now();
      const entries = fhirJsonEntries(body);
      validateR4(entries);
      checkPatientIdentity(entries, { subject: '01-001', sex: 'male', birthYear: 1915 });
      const result = mapToEcrf(entries, demo, { enrolledOn: '1992-12-05', saved: nothingSaved });
      const elapsed = performance.now() - start;
      expect(result.items.length).to.be.above(500);
      expect(elapsed).to.be.below(1000);
    });
  });
});
