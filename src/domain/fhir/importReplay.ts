import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError } from '../errors.js';
import type { Patient, PatientStore, Study } from '../stores.js';
import { hiddenFormCodes } from '../studies/designForKey.js';
import { countItems, type FhirImportCounts, type FhirImportItem } from './fhirImportItem.js';

/**
 * The patient a key's FHIR file is about, when the key may reach it: one of its sites, and not a patient who
 * withdrew consent to the use of their data (whom the read calls leave out). Anyone else is reported exactly
 * like a patient that does not exist.
 *
 * @throws DomainError `unknown_subject`
 */
export async function patientForKey(patients: PatientStore, key: Pick<KeyContext, 'siteIds'>, study: Study, subject: string): Promise<Patient> {
  const [patient] = await patients.findBySubjects(study.id, [subject]);
  if (!patient || !key.siteIds.includes(patient.siteId) || patient.dataUseWithdrawnAt) throw new DomainError('unknown_subject', { subject });
  return patient;
}

/**
 * A FHIR call's kept answer as the key may see it when the same `Idempotency-Key` comes again
 * (src/domain/idempotency/onceForKey.ts): refused when its patient is out of the key's reach now, and
 * without the items on forms hidden from the key now (its maker blinded since), counted from what is left,
 * as `getFhirImport` shows the import.
 *
 * @throws DomainError `unknown_subject`
 */
export async function importAsSeenNow<A extends { subject: string; counts: FhirImportCounts; items: Pick<FhirImportItem, 'form' | 'state'>[] }>(
  patients: PatientStore, key: Pick<KeyContext, 'siteIds' | 'makerUnblinded'>, study: Study, kept: A,
): Promise<A> {
  await patientForKey(patients, key, study, kept.subject);
  const hidden = hiddenFormCodes(study, key.makerUnblinded);
  if (!kept.items.some((item) => item.form !== null && hidden.has(item.form))) return kept;
  const items = kept.items.filter((item) => item.form === null || !hidden.has(item.form));
  return { ...kept, items, counts: countItems(items) };
}
