/// <reference types="fhir" />
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { DomainError } from '../../src/domain/errors.js';
import type { FhirEntry } from '../../src/domain/fhir/fhirEntry.js';
import { parseNdjsonEntries } from '../../src/domain/fhir/parseFhirBody.js';
import { fhirJsonEntries } from '../helpers/fhirFiles.js';
import { checkPatientIdentity, type StudyPatient } from '../../src/domain/fhir/patientIdentity.js';

const FIXTURES = new URL('../fixtures/fhir/', import.meta.url);
const fixture = (path: string): Buffer => readFileSync(new URL(path, FIXTURES));
const hl7 = (file: string) => JSON.parse(fixture(`hl7-examples/${file}`).toString('utf8')) as fhir4.Resource;
const bundle = (file: string): FhirEntry[] => fhirJsonEntries(fixture(`synthea/${file}`));
const ndjson = (...resources: fhir4.Resource[]): FhirEntry[] => parseNdjsonEntries(resources.map((r) => JSON.stringify(r)).join('\n'));

/** The error code and reason of a call that must refuse. */
function refusal(call: () => unknown): { code: string; reason: string; subject: unknown } {
  try {
    call();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    const { code, params } = error as DomainError;
    return { code, reason: String(params.reason), subject: params.subject };
  }
  throw new Error('expected a refusal');
}

const SYNTHEA_IDENTIFIER = 'https://github.com/synthetichealth/synthea';

describe('checkPatientIdentity', function () {
  this.timeout(10_000);

  // Sex and birth year as the shared fixture README gives them.
  const patients: [string, StudyPatient['sex'], number, string][] = [
    ['smart-buster-hoeger-235kb.json', 'male', 1988, 'Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4'],
    ['smart-edward-gulgowski-284kb.json', 'male', 1992, 'Patient/4ef9f896-10bc-4479-acd6-1153e7318f14'],
    ['smart-emery-purdy-897kb.json', 'male', 1967, 'Patient/efe58fa2-c6df-4a71-8e37-06c5e4f1e2b8'],
    ['iris-lean-davis-1031kb.json', 'female', 1945, 'Patient/3e36b31d-3c32-43b4-b016-b46a90c2e50f'],
    ['inferno-uscore-patient-355-1113kb.json', 'male', 1940, 'Patient/355'],
    ['smart-kyla-zulauf-1903kb.json', 'female', 1941, 'Patient/7e50540e-d263-4fd4-a2da-b97279871200'],
    ['smart-stewart-stanton-1942kb.json', 'male', 1915, 'Patient/ecaea95c-46de-4ac9-a58d-4847d1a3e574'],
    ['smart-vito-feeney-3455kb.json', 'male', 1910, 'Patient/9efca32a-04f9-438a-990c-a287e8b62aac'],
    ['smart-fletcher-hyatt-3794kb.json', 'male', 1915, 'Patient/c5ed5d78-5b3f-4a75-bdfb-5f318b068a20'],
  ];
  for (const [file, sex, birthYear, reference] of patients) {
    it(`accepts synthea/${file} for its own patient (${sex}, ${birthYear})`, () => {
      const identity = checkPatientIdentity(bundle(file), { subject: '01-001', sex, birthYear });
      expect(identity.patient).to.equal(reference);
      expect(identity.identifiers.some((id) => id.system === SYNTHEA_IDENTIFIER)).to.equal(true);
    });
  }

  it('resolves the Inferno references through the Patient fullUrl, not its id 355', () => {
    const entries = bundle('inferno-uscore-patient-355-1113kb.json');
    expect(entries[0]?.resource.id).to.equal('355');
    const identity = checkPatientIdentity(entries, { subject: '01-001', sex: 'male', birthYear: 1940 });
    expect(identity.identifiers).to.deep.include({ system: SYNTHEA_IDENTIFIER, value: 'e91975f5-9445-c11f-cabf-c3c6dae161f2' });
    // Bare resources lose the fullUrls, and urn:uuid: references then point at nobody in the file.
    const bare = fhirJsonEntries(fixture('synthea/inferno-uscore-patient-355-1113kb.json')).map((e) => e.resource);
    expect(refusal(() => checkPatientIdentity(bare, { subject: '01-001', sex: 'male', birthYear: 1940 })).code).to.equal('fhir_other_patient');
  });

  it('accepts a Patient and resources referring to it as Patient/<id>, relative or absolute', () => {
    const patient = hl7('patient-example.json');
    const weight = hl7('observation-example.json') as fhir4.Observation;
    const absolute = { ...(hl7('observation-example-heart-rate.json') as fhir4.Observation), subject: { reference: 'https://ehr.example.org/fhir/Patient/example/_history/2' } };
    const identity = checkPatientIdentity(ndjson(patient, weight, absolute), { subject: '01-002', sex: 'male', birthYear: 1974 });
    expect(identity).to.deep.equal({ patient: 'Patient/example', identifiers: [{ system: 'urn:oid:1.2.36.146.595.217.0.1', value: '12345' }] });
  });

  describe('absolute references and a Patient with an absolute fullUrl', () => {
    const hospitalA = 'http://hospital-a.example/fhir';
    const heartRate = (subject: string) => ({ ...(hl7('observation-example-heart-rate.json') as fhir4.Observation), subject: { reference: subject } });
    const file = (subject: string): FhirEntry[] => [
      { fullUrl: `${hospitalA}/Patient/example`, resource: hl7('patient-example.json'), index: 0 },
      { fullUrl: `${hospitalA}/Observation/heart-rate`, resource: heartRate(subject), index: 1 },
    ];
    const enrolled: StudyPatient = { subject: 's', sex: 'male', birthYear: 1974 };

    it('accepts the Patient named by its own server\'s address, with or without a version, or relatively', () => {
      for (const subject of [`${hospitalA}/Patient/example`, `${hospitalA}/Patient/example/_history/2`, 'Patient/example']) {
        expect(checkPatientIdentity(file(subject), enrolled).patient, subject).to.equal('Patient/example');
      }
    });

    it('refuses Patient/<id> on another server as another patient (fhir_other_patient)', () => {
      const { code, reason } = refusal(() => checkPatientIdentity(file('http://hospital-b.example/fhir/Patient/example'), enrolled));
      expect([code, reason]).to.deep.equal([
        'fhir_other_patient',
        "Observation/heart-rate subject refers to http://hospital-b.example/fhir/Patient/example, not to the file's Patient Patient/example",
      ]);
    });
  });

  it('refuses a resource of another patient (fhir_other_patient), naming it', () => {
    const entries = [...bundle('smart-buster-hoeger-235kb.json'), { resource: hl7('observation-example.json'), index: 66 }];
    const { code, reason, subject } = refusal(() => checkPatientIdentity(entries, { subject: '01-003', sex: 'male', birthYear: 1988 }));
    expect(code).to.equal('fhir_other_patient');
    expect(subject).to.equal('01-003');
    expect(reason).to.equal(
      "Observation/example subject refers to Patient/example, not to the file's Patient Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4",
    );
  });

  it('refuses two Synthea bundles merged into one (fhir_two_patients)', () => {
    const merged = JSON.stringify({
      resourceType: 'Bundle',
      type: 'collection',
      entry: [fixture('synthea/smart-buster-hoeger-235kb.json'), fixture('synthea/smart-edward-gulgowski-284kb.json')].flatMap(
        (b) => (JSON.parse(b.toString('utf8')) as fhir4.Bundle).entry ?? [],
      ),
    });
    const { code, reason } = refusal(() => checkPatientIdentity(fhirJsonEntries(merged), { subject: '01-004', sex: 'male', birthYear: 1988 }));
    expect(code).to.equal('fhir_two_patients');
    expect(reason).to.equal(
      'the file has two Patients: Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4 and Patient/4ef9f896-10bc-4479-acd6-1153e7318f14',
    );
  });

  it('refuses two HL7 example Patients sent as NDJSON, and accepts the same Patient twice', () => {
    const twoPatients = ndjson(hl7('patient-example-f001-pieter.json'), hl7('patient-example-f201-roel.json'));
    expect(refusal(() => checkPatientIdentity(twoPatients, { subject: 's', sex: 'male', birthYear: 1944 })).code).to.equal('fhir_two_patients');
    const samePatient = ndjson(hl7('patient-example-f201-roel.json'), hl7('patient-example-f201-roel.json'));
    expect(checkPatientIdentity(samePatient, { subject: 's', sex: 'male', birthYear: 1960 }).patient).to.equal('Patient/f201');
  });

  it('accepts resources without a Patient when they all refer to one patient, and refuses two', () => {
    const onePatient = ndjson(hl7('observation-example.json'), hl7('observation-example-heart-rate.json'), hl7('observation-example-bmi.json'));
    expect(checkPatientIdentity(onePatient, { subject: 's', sex: 'female', birthYear: 2000 })).to.deep.equal({ patient: null, identifiers: [] });
    const twoPatients = ndjson(hl7('observation-example-f001-glucose.json'), hl7('observation-example-f204-creatinine.json'));
    const { code, reason } = refusal(() => checkPatientIdentity(twoPatients, { subject: 's', sex: 'male', birthYear: 1944 }));
    expect(code).to.equal('fhir_two_patients');
    expect(reason).to.equal('the file refers to two patients: Patient/f001 and Patient/f201');
  });

  it('counts Patient/<id> on two servers as two patients in a file without a Patient, and one server\'s versions as one', () => {
    const heartRate = (id: string, reference: string) => ({ ...(hl7('observation-example-heart-rate.json') as fhir4.Observation), id, subject: { reference } });
    const twoServers = [heartRate('a', 'https://a.example/fhir/Patient/1'), heartRate('b', 'https://b.example/fhir/Patient/1')];
    expect(refusal(() => checkPatientIdentity(twoServers, { subject: 's', sex: 'female', birthYear: 2000 })).code).to.equal('fhir_two_patients');
    const versions = [heartRate('a', 'https://a.example/fhir/Patient/1/_history/2'), heartRate('b', 'https://a.example/fhir/Patient/1')];
    expect(checkPatientIdentity(versions, { subject: 's', sex: 'female', birthYear: 2000 }).patient).to.equal(null);
  });

  describe('a subject that is not a Patient (a Group, a Location, a Device)', () => {
    const bmi = (id: string, subject: fhir4.Reference, extra: Partial<fhir4.Observation> = {}): fhir4.Observation =>
      ({ ...(hl7('observation-example-bmi.json') as fhir4.Observation), id, subject, ...extra });
    const condition = (subject: fhir4.Reference): fhir4.Condition => ({ resourceType: 'Condition', id: 'c', code: { text: 'asthma' }, subject });
    const statement = (subject: fhir4.Reference, extra: Partial<fhir4.MedicationStatement> = {}): fhir4.MedicationStatement =>
      ({ resourceType: 'MedicationStatement', id: 'm', status: 'active', medicationCodeableConcept: { text: 'salbutamol' }, subject, ...extra });
    const ward = { resourceType: 'Location', id: 'ward' } as fhir4.Location;
    const cases: [string, fhir4.Resource[], string][] = [
      ['an Observation about a Group', [bmi('g', { reference: 'Group/103' })], 'Observation/g subject refers to Group/103, which is not a Patient'],
      ['an Observation about a Location of the file', [ward, bmi('l', { reference: 'Location/ward' })], 'Observation/l subject refers to Location/ward, which is not a Patient'],
      ['a Condition about a Device on a server', [condition({ reference: 'https://ehr.example.org/fhir/Device/pump-1' })], 'Condition/c subject refers to https://ehr.example.org/fhir/Device/pump-1, which is not a Patient'],
      [
        'a MedicationStatement about a contained Group',
        [statement({ reference: '#g' }, { contained: [{ resourceType: 'Group', id: 'g', type: 'person', actual: true } as fhir4.Group] })],
        'MedicationStatement/m subject refers to #g, which is not a Patient',
      ],
      ['an Observation about a Group named by identifier', [bmi('i', { type: 'Group', identifier: { system: 'urn:ward', value: '7' } })], 'Observation/i subject refers to Group urn:ward|7, which is not a Patient'],
    ];
    for (const [name, resources, reason] of cases) {
      it(`refuses ${name} (fhir_other_patient), with or without a Patient in the file`, () => {
        for (const file of [ndjson(hl7('patient-example.json'), ...resources), ndjson(...resources)]) {
          expect(refusal(() => checkPatientIdentity(file, { subject: 's', sex: 'male', birthYear: 1974 }))).to.deep.equal({ code: 'fhir_other_patient', reason, subject: 's' });
        }
      });
    }

    it('ignores such references on resources the mapping never reads (an Encounter, a DiagnosticReport, a Device)', () => {
      const encounter = { resourceType: 'Encounter', id: 'e', status: 'finished', class: { code: 'AMB' }, subject: { reference: 'Group/103' } } as fhir4.Encounter;
      const report = { resourceType: 'DiagnosticReport', id: 'r', status: 'final', code: { text: 'ward round' }, subject: { reference: 'Location/ward' } } as fhir4.DiagnosticReport;
      const device = { resourceType: 'Device', id: 'd', patient: { reference: 'Group/103' } } as fhir4.Device;
      const result = checkPatientIdentity(ndjson(hl7('patient-example.json'), hl7('observation-example.json'), ward, encounter, report, device), {
        subject: 's',
        sex: 'male',
        birthYear: 1974,
      });
      expect(result.patient).to.equal('Patient/example');
    });
  });

  it('matches identifier-only references against the Patient', () => {
    const byIdentifier = (value: string) => ({
      ...(hl7('observation-example-bmi.json') as fhir4.Observation),
      subject: { identifier: { system: 'urn:oid:1.2.36.146.595.217.0.1', value } },
    });
    const patient = hl7('patient-example.json');
    expect(checkPatientIdentity(ndjson(patient, byIdentifier('12345')), { subject: 's', sex: 'male', birthYear: 1974 }).patient).to.equal('Patient/example');
    expect(refusal(() => checkPatientIdentity(ndjson(patient, byIdentifier('99999')), { subject: 's', sex: 'male', birthYear: 1974 })).reason).to.equal(
      "Observation/bmi subject refers to urn:oid:1.2.36.146.595.217.0.1|99999, not to the file's Patient Patient/example",
    );
  });

  describe('a file with several Patients', () => {
    const person = (id: string, gender: 'female' | 'male', birthDate: string, mrn: string): fhir4.Patient => ({
      resourceType: 'Patient', id, gender, birthDate, identifier: [{ system: 'urn:oid:1.2.3.4', value: mrn }],
    });
    const enrolled: StudyPatient = { subject: '01-001', sex: 'female', birthYear: 1970 };
    const atHospital = (server: string, resource: fhir4.Patient): FhirEntry => ({ fullUrl: `http://${server}.example/fhir/Patient/${resource.id}`, resource, index: 0 });

    it('refuses two Patients with the same id on two servers (fhir_two_patients), in either order', () => {
      const a = atHospital('hospital-a', person('1', 'female', '1970-05-14', 'A-1'));
      const b = atHospital('hospital-b', person('1', 'male', '1950-01-01', 'B-1'));
      for (const [one, two] of [[a, b], [b, a]] as const) {
        const { code, reason } = refusal(() => checkPatientIdentity([one, { ...two, index: 1 }], enrolled));
        expect([code, reason]).to.deep.equal(['fhir_two_patients', 'the file has two Patients: Patient/1 and Patient/1']);
      }
    });

    it('counts the same id on one server as one Patient, a version apart', () => {
      const a = atHospital('hospital-a', person('1', 'female', '1970-05-14', 'A-1'));
      const again = { ...a, fullUrl: `${a.fullUrl}/_history/2`, resource: person('1', 'female', '1970-05-14', 'A-2'), index: 1 };
      expect(checkPatientIdentity([a, again], enrolled).identifiers.map((i) => i.value)).to.deep.equal(['A-1', 'A-2']);
    });

    it('checks every Patient against the enrolment, not only the first (shared identifier, or same id)', () => {
      const files: [string, fhir4.Patient[]][] = [
        ['a shared identifier', [person('1', 'female', '1970-05-14', 'A-1'), person('2', 'male', '1970-05-14', 'A-1')]],
        ['the same id', [person('1', 'female', '1970-05-14', 'A-1'), person('1', 'female', '1950-05-14', 'A-2')]],
      ];
      for (const [why, resources] of files) {
        expect(refusal(() => checkPatientIdentity(ndjson(...resources), enrolled)).code, why).to.equal('fhir_identity_mismatch');
      }
      const { reason } = refusal(() => checkPatientIdentity(ndjson(...(files[0]?.[1] ?? [])), enrolled));
      expect(reason).to.equal('the Patient Patient/2 is male, the patient was enrolled as female');
    });

    it('requires the linked identifier of every Patient', () => {
      const linkedA1 = { ...enrolled, linkedIdentity: [{ system: 'urn:oid:1.2.3.4', value: 'A-1' }] };
      const second = { ...person('1', 'female', '1970-05-14', 'A-1'), identifier: [] };
      expect(refusal(() => checkPatientIdentity(ndjson(person('1', 'female', '1970-05-14', 'A-1'), second), linkedA1)).reason).to.equal(
        'the Patient Patient/1 carries none of the identifiers linked to the patient (urn:oid:1.2.3.4|A-1)',
      );
    });
  });

  describe('a Patient contained in a resource and named by its subject', () => {
    const heartRate = (contained: fhir4.Patient): fhir4.Observation => ({
      ...(hl7('observation-example-heart-rate.json') as fhir4.Observation), subject: { reference: '#p' }, contained: [contained],
    });
    const person = (gender: 'female' | 'male', birthDate: string, mrn: string): fhir4.Patient => ({
      resourceType: 'Patient', id: 'p', gender, birthDate, identifier: [{ system: 'urn:oid:1.2.3.4', value: mrn }],
    });
    const enrolled: StudyPatient = { subject: '01-001', sex: 'female', birthYear: 1970 };

    it('is checked against the enrolment, with or without a Patient entry in the file', () => {
      const contained = heartRate(person('male', '1950-01-01', 'A-1'));
      expect(refusal(() => checkPatientIdentity(ndjson(contained), enrolled)).reason).to.equal(
        'the Patient #p contained in Observation/heart-rate is male, the patient was enrolled as female',
      );
      const entry = { ...person('female', '1970-05-14', 'A-1'), id: 'a' };
      expect(refusal(() => checkPatientIdentity(ndjson(entry, contained), enrolled)).code).to.equal('fhir_identity_mismatch');
    });

    it('must carry one of the linked identifiers', () => {
      const linked = { ...enrolled, linkedIdentity: [{ system: 'urn:oid:1.2.3.4', value: 'LINKED' }] };
      expect(refusal(() => checkPatientIdentity(ndjson(heartRate(person('female', '1970-01-01', 'X'))), linked)).reason).to.equal(
        'the Patient #p contained in Observation/heart-rate carries none of the identifiers linked to the patient (urn:oid:1.2.3.4|LINKED)',
      );
      expect(() => checkPatientIdentity(ndjson(heartRate(person('female', '1970-01-01', 'LINKED'))), linked)).not.to.throw();
    });

    it('gives its identifiers for linking', () => {
      expect(checkPatientIdentity(ndjson(heartRate(person('female', '1970-01-01', 'X'))), enrolled)).to.deep.equal({
        patient: null,
        identifiers: [{ system: 'urn:oid:1.2.3.4', value: 'X' }],
      });
    });
  });

  describe('identity against the enrolment (fhir_identity_mismatch)', () => {
    const buster = () => bundle('smart-buster-hoeger-235kb.json');

    it('refuses a Patient whose gender contradicts the enrolled sex', () => {
      const { code, reason, subject } = refusal(() => checkPatientIdentity(buster(), { subject: '01-005', sex: 'female', birthYear: 1988 }));
      expect([code, subject, reason]).to.deep.equal(['fhir_identity_mismatch', '01-005', 'the Patient Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4 is male, the patient was enrolled as female']);
    });

    it('does not treat other or unknown as a contradiction', () => {
      expect(() => checkPatientIdentity(buster(), { subject: '01-005', sex: 'unknown', birthYear: 1988 })).not.to.throw();
      expect(() => checkPatientIdentity(buster(), { subject: '01-005', sex: 'other', birthYear: 1988 })).not.to.throw();
    });

    it('refuses a Patient born in another year', () => {
      const { code, reason } = refusal(() => checkPatientIdentity(buster(), { subject: '01-005', sex: 'male', birthYear: 1989 }));
      expect([code, reason]).to.deep.equal(['fhir_identity_mismatch', 'the Patient Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4 was born in 1988, the patient was enrolled with birth year 1989']);
    });

    it('requires one of the linked identifiers when there are some', () => {
      const linked = (linkedIdentity: StudyPatient['linkedIdentity']) => ({ subject: '01-005', sex: 'male' as const, birthYear: 1988, linkedIdentity });
      expect(() => checkPatientIdentity(buster(), linked([{ system: SYNTHEA_IDENTIFIER, value: 'ad2e3fc5-2b5d-4cb9-8d03-9ea0f4ac8423' }]))).not.to.throw();
      expect(() => checkPatientIdentity(buster(), linked([{ value: 'ad2e3fc5-2b5d-4cb9-8d03-9ea0f4ac8423' }]))).not.to.throw();
      expect(() => checkPatientIdentity(buster(), linked(null))).not.to.throw();
      expect(() => checkPatientIdentity(buster(), linked([]))).not.to.throw();
      // Emery Purdy's identifier: the file is Buster Hoeger's.
      const { code, reason } = refusal(() => checkPatientIdentity(buster(), linked([{ system: SYNTHEA_IDENTIFIER, value: '298c62e6-b204-4a14-8e21-73d5be0ce22e' }])));
      expect(code).to.equal('fhir_identity_mismatch');
      expect(reason).to.equal(`the Patient Patient/e4531916-b162-4f4b-90c2-ce37e132b8d4 carries none of the identifiers linked to the patient (${SYNTHEA_IDENTIFIER}|298c62e6-b204-4a14-8e21-73d5be0ce22e)`);
      // Same value in another system is another identifier.
      expect(refusal(() => checkPatientIdentity(buster(), linked([{ system: 'urn:other', value: 'ad2e3fc5-2b5d-4cb9-8d03-9ea0f4ac8423' }]))).code).to.equal(
        'fhir_identity_mismatch',
      );
    });
  });
});
