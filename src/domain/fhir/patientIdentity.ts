/// <reference types="fhir" />
/**
 * Checks that an imported FHIR file concerns exactly the study patient it was sent for (spec, FHIR call
 * rules 1 and 5; `importFhirRecord` refusals `fhir_other_patient`, `fhir_two_patients`,
 * `fhir_identity_mismatch`).
 */
import { DomainError, type ErrorCode } from '../errors.js';
import { entryReference, toEntries, type FhirEntry, type FhirInput } from './fhirEntry.js';
import { indexEntries, isAbsoluteUrl, namesEntry, resolveReference, typedId, withoutHistory, type ResourceIndex } from './fhirReferences.js';
import { MAPPED_TYPES } from './mapToEcrf.js';

/** An identifier of the patient in a source system, as kept to recognise the patient in later files. */
interface LinkedIdentifier {
  system?: string;
  value: string;
}

/** The study patient the file was sent for. */
export interface StudyPatient {
  subject: string;
  /** HL7 administrative gender, as sent on enrolment. */
  sex: 'female' | 'male' | 'other' | 'unknown';
  birthYear: number;
  /** Identifiers linked by earlier imports, if any: the file's Patient must carry one of them. */
  linkedIdentity?: LinkedIdentifier[] | null;
}

/** Who the file is about. */
export interface PatientIdentity {
  /** How the file names its Patient (`Patient/355`, or a fullUrl), or null when it has no Patient resource. */
  patient: string | null;
  /** The identifiers to link to the study patient: the Patient's, or those of identifier-only references. */
  identifiers: LinkedIdentifier[];
}

/** Where a `subject` or `patient` reference points, when it points at a patient. */
type PatientPointer =
  | { kind: 'patient'; entry: FhirEntry }
  | { kind: 'literal'; key: string; text: string }
  | { kind: 'identifier'; identifier: LinkedIdentifier; text: string }
  | { kind: 'contained'; patient: fhir4.Patient; text: string };

/** A `subject` / `patient` reference known to point at something else than a patient (a Group, a Device…). */
interface NotAPatient {
  kind: 'not-patient';
  text: string;
}

/** A Patient resource of the file (an entry, or contained and named by a reference) and how reasons name it. */
interface FilePatient {
  resource: fhir4.Patient;
  name: string;
}

const MEMBERS = ['subject', 'patient'] as const;

/**
 * Checks the file's Patient and every `subject` / `patient` reference against the study patient.
 *
 * - At most one Patient: Patient resources with the same id, or sharing an identifier, count as one,
 *   but not two with the same id whose fullUrls are absolute addresses on different servers.
 * - Every `subject`/`patient` reference that points at a patient must point at that Patient: by its
 *   fullUrl, by `Patient/<id>` (relative, or absolute on the server of the Patient's absolute fullUrl:
 *   `namesEntry`), by one of its identifiers, or to a contained Patient sharing one of its identifiers.
 * - A resource the mapping takes values from (`MAPPED_TYPES`: Observation, Condition, medications)
 *   whose subject is a Group, Location, Device or anything else than a Patient is about someone or
 *   something else than the patient: `fhir_other_patient`. On other resources (an Encounter, a
 *   Device's owner) such references are ignored, as nothing of them reaches the eCRF.
 * - A Patient contained in a resource and named by its `subject` / `patient` (`#p`) is a Patient of
 *   the file: it is checked against the enrolment like one, and its identifiers are linked.
 * - Without a Patient resource (an NDJSON of Observations), all patient references must name the same
 *   patient. Such a file cannot be checked against gender, birth year or linked identifiers except
 *   through contained Patients and identifier-only references; it is accepted and links only their
 *   identifiers.
 * - Every Patient of the file, not only the first, is checked against the enrolment: its gender and
 *   birth year must not contradict it (only male against female contradicts: `other` and `unknown` on
 *   either side say nothing), and when identifiers are linked from earlier imports it must carry one of
 *   them (same value, and the same system when the linked identifier has one).
 *
 * @returns the Patient's reference and the identifiers to link
 * @throws DomainError `fhir_two_patients`, `fhir_other_patient` or `fhir_identity_mismatch`, each with
 *   `params.subject` and an English `params.reason`
 */
export function checkPatientIdentity(input: FhirInput, patient: StudyPatient): PatientIdentity {
  const entries = toEntries(input);
  const index = indexEntries(entries);
  const patients = entries.filter((e) => e.resource.resourceType === 'Patient');
  const fail = (code: ErrorCode, reason: string) => new DomainError(code, { subject: patient.subject, reason });

  const [first, ...morePatients] = patients;
  for (const other of morePatients) {
    if (first && !samePatient(first, other)) {
      throw fail('fhir_two_patients', `the file has two Patients: ${entryReference(first)} and ${entryReference(other)}`);
    }
  }
  const main = patients[0];
  const mainIdentifiers = patients.flatMap((p) => identifiersOf(p.resource as fhir4.Patient));

  const others = new Map<string, string>();
  const contained: FilePatient[] = [];
  /** Identifiers that identifier-only references give: the only ones a file without a Patient carries. */
  const referenced: LinkedIdentifier[] = [];
  for (const entry of entries) {
    for (const member of MEMBERS) {
      const pointer = patientPointer(entry, member, index);
      if (!pointer) continue;
      if (pointer.kind === 'not-patient') {
        if (MAPPED_TYPES.has(entry.resource.resourceType)) {
          throw fail('fhir_other_patient', `${entryReference(entry)} ${member} refers to ${pointer.text}, which is not a Patient`);
        }
        continue;
      }
      if (pointer.kind === 'contained') {
        contained.push({ resource: pointer.patient, name: `the Patient ${pointer.text} contained in ${entryReference(entry)}` });
      }
      if (pointer.kind === 'identifier') referenced.push(pointer.identifier);
      if (main) {
        if (!pointsAtMain(pointer, patients, mainIdentifiers)) {
          throw fail(
            'fhir_other_patient',
            `${entryReference(entry)} ${member} refers to ${describePointer(pointer)}, not to the file's Patient ${entryReference(main)}`,
          );
        }
      } else {
        const key = pointerKey(pointer);
        if (!others.has(key)) others.set(key, describePointer(pointer));
        if (others.size > 1) {
          const [a, b] = [...others.values()];
          throw fail('fhir_two_patients', `the file refers to two patients: ${a} and ${b}`);
        }
      }
    }
  }

  const filePatients = [...patients.map((p) => ({ resource: p.resource as fhir4.Patient, name: `the Patient ${entryReference(p)}` })), ...contained];
  // Patients counted as one (same id, a shared identifier) may still be another person's record.
  for (const p of filePatients) checkAgainstEnrolment(p.resource, p.name, patient, fail);
  const identifiers = filePatients.flatMap((p) => identifiersOf(p.resource));
  if (main) return { patient: entryReference(main), identifiers: dedupe(identifiers) };

  const linked = patient.linkedIdentity ?? [];
  const [firstReferenced] = referenced;
  if (firstReferenced && linked.length > 0 && !referenced.some((id) => linked.some((l) => identifierMatches(l, id)))) {
    throw fail('fhir_identity_mismatch', `the file's patient identifier ${describeIdentifier(firstReferenced)} is not one linked to the patient`);
  }
  return { patient: null, identifiers: dedupe([...identifiers, ...referenced]) };
}

/**
 * Refuses a Patient of the file whose gender or birth year contradicts the enrolment, or that carries
 * none of the identifiers linked to the patient when there are some.
 *
 * @param name - how the reason names the Patient (`the Patient Patient/355`)
 */
function checkAgainstEnrolment(
  resource: fhir4.Patient,
  name: string,
  patient: StudyPatient,
  fail: (code: ErrorCode, reason: string) => DomainError,
): void {
  const gender = resource.gender;
  if ((gender === 'male' || gender === 'female') && (patient.sex === 'male' || patient.sex === 'female') && gender !== patient.sex) {
    throw fail('fhir_identity_mismatch', `${name} is ${gender}, the patient was enrolled as ${patient.sex}`);
  }
  const birthYear = resource.birthDate ? Number(resource.birthDate.slice(0, 4)) : null;
  if (birthYear !== null && birthYear !== patient.birthYear) {
    throw fail('fhir_identity_mismatch', `${name} was born in ${birthYear}, the patient was enrolled with birth year ${patient.birthYear}`);
  }
  const linked = patient.linkedIdentity ?? [];
  if (linked.length > 0 && !identifiersOf(resource).some((id) => linked.some((l) => identifierMatches(l, id)))) {
    throw fail('fhir_identity_mismatch', `${name} carries none of the identifiers linked to the patient (${linked.map(describeIdentifier).join(', ')})`);
  }
}

function samePatient(a: FhirEntry, b: FhirEntry): boolean {
  if (a.fullUrl && a.fullUrl === b.fullUrl) return true;
  // Ids are a server's own: hospital A's Patient/1 and hospital B's Patient/1 are two people.
  if (a.resource.id && a.resource.id === b.resource.id && !onDifferentServers(a, b)) return true;
  const ids = identifiersOf(b.resource as fhir4.Patient);
  return identifiersOf(a.resource as fhir4.Patient).some((x) => ids.some((y) => x.system === y.system && x.value === y.value));
}

/** Whether both entries have absolute fullUrls that are different addresses, as on two servers. */
function onDifferentServers(a: FhirEntry, b: FhirEntry): boolean {
  return !!a.fullUrl && !!b.fullUrl && isAbsoluteUrl(a.fullUrl) && isAbsoluteUrl(b.fullUrl) && !namesEntry(a.fullUrl, b);
}

function identifiersOf(patient: fhir4.Patient): LinkedIdentifier[] {
  return (patient.identifier ?? []).flatMap((id) =>
    typeof id.value === 'string' && id.value !== '' ? [id.system ? { system: id.system, value: id.value } : { value: id.value }] : [],
  );
}

/** A linked identifier matches when the values are equal and, if it names a system, the systems too. */
function identifierMatches(linked: LinkedIdentifier, found: LinkedIdentifier): boolean {
  return linked.value === found.value && (!linked.system || linked.system === found.system);
}

/** Where the entry's `subject` or `patient` points, or null when it has none (or an unresolved `#id`). */
function patientPointer(entry: FhirEntry, member: (typeof MEMBERS)[number], index: ResourceIndex): PatientPointer | NotAPatient | null {
  const ref = (entry.resource as unknown as Record<string, unknown>)[member] as fhir4.Reference | undefined;
  if (!ref || typeof ref !== 'object') return null;
  if (typeof ref.reference === 'string' && ref.reference !== '') {
    const text = ref.reference;
    const resolved = resolveReference(index, text, entry.resource);
    if (resolved?.where === 'file') {
      return resolved.entry.resource.resourceType === 'Patient' ? { kind: 'patient', entry: resolved.entry } : { kind: 'not-patient', text };
    }
    if (resolved?.where === 'contained') {
      return resolved.resource.resourceType === 'Patient' ? { kind: 'contained', patient: resolved.resource as fhir4.Patient, text } : { kind: 'not-patient', text };
    }
    if (text.startsWith('#')) return null;
    const typed = typedId(text);
    if (typed && typed.type !== 'Patient') return { kind: 'not-patient', text };
    // A reference to a Patient not in the file, or an unresolved urn:uuid: (which may name one). An absolute one
    // is that server's Patient: the same id on two servers is two patients.
    const key = typed && !isAbsoluteUrl(text) ? `Patient/${typed.id}` : withoutHistory(text);
    return { kind: 'literal', key, text };
  }
  if (ref.identifier?.value) {
    const identifier = ref.identifier.system ? { system: ref.identifier.system, value: ref.identifier.value } : { value: ref.identifier.value };
    // Only a reference typed as something else than Patient is known not to be about the patient.
    if (ref.type && ref.type !== 'Patient') return { kind: 'not-patient', text: `${ref.type} ${describeIdentifier(identifier)}` };
    return { kind: 'identifier', identifier, text: describeIdentifier(identifier) };
  }
  return null;
}

function pointsAtMain(pointer: PatientPointer, patients: FhirEntry[], identifiers: LinkedIdentifier[]): boolean {
  switch (pointer.kind) {
    case 'patient':
      return patients.includes(pointer.entry);
    case 'literal':
      return patients.some((p) => namesEntry(pointer.text, p));
    case 'identifier':
      return identifiers.some((id) => identifierMatches(pointer.identifier, id));
    case 'contained':
      return identifiersOf(pointer.patient).some((c) => identifiers.some((id) => c.system === id.system && c.value === id.value));
  }
}

function pointerKey(pointer: PatientPointer): string {
  switch (pointer.kind) {
    case 'patient':
      return `entry:${pointer.entry.index}`;
    case 'literal':
      return pointer.key;
    case 'identifier':
      return `identifier:${pointer.identifier.system ?? ''}|${pointer.identifier.value}`;
    case 'contained': {
      const first = identifiersOf(pointer.patient)[0];
      return first ? `identifier:${first.system ?? ''}|${first.value}` : `contained:${pointer.text}`;
    }
  }
}

function describePointer(pointer: PatientPointer): string {
  return pointer.kind === 'patient' ? entryReference(pointer.entry) : pointer.text;
}

function describeIdentifier(identifier: LinkedIdentifier): string {
  return identifier.system ? `${identifier.system}|${identifier.value}` : identifier.value;
}

function dedupe(identifiers: LinkedIdentifier[]): LinkedIdentifier[] {
  const seen = new Set<string>();
  return identifiers.filter((id) => {
    const key = `${id.system ?? ''}|${id.value}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
