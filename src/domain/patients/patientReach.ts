import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError } from '../errors.js';
import type { Consent, Patient, PatientStore, Study } from '../stores.js';

/**
 * The patient a key's FHIR file is about, when the key may reach it: one of its sites, and not a patient who
 * withdrew consent to the use of their data (whom the read calls leave out). Anyone else is reported exactly
 * like a patient that does not exist.
 *
 * @throws DomainError `unknown_subject`
 */
export async function patientForKey(patients: PatientStore, key: Pick<KeyContext, 'siteIds'>, study: Study, subject: string): Promise<Patient & { consent: Consent | undefined }> {
  const [patient] = await patients.findBySubjects(study.id, [subject]);
  if (!patient || !key.siteIds.includes(patient.siteId) || patient.dataUseWithdrawnAt) throw new DomainError('unknown_subject', { subject });
  return patient;
}
