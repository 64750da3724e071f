import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError } from '../errors.js';
import type { Consent, Patient, PatientStore, Study } from '../stores.js';

/**
 * Whether a key (or a writer with these sites) may reach the patient: one of its sites, and not a patient who
 * withdrew consent to the use of their data, whom the read calls leave out and the consent gate lets through
 * when the study does not require consent. Anyone else is reported exactly like a patient that does not exist:
 * an answer about them (`unchanged`, `skip`, a FHIR review) would tell what is saved.
 */
export function reachable<P extends Pick<Patient, 'siteId' | 'dataUseWithdrawnAt'>>(patient: P | undefined, siteIds: readonly number[]): patient is P {
  return patient !== undefined && siteIds.includes(patient.siteId) && !patient.dataUseWithdrawnAt;
}

/**
 * The patient of that subject when the key may reach it (`reachable`).
 *
 * @throws DomainError `unknown_subject`
 */
export async function patientForKey(patients: PatientStore, key: Pick<KeyContext, 'siteIds'>, study: Study, subject: string): Promise<Patient & { consent: Consent | undefined }> {
  const [patient] = await patients.findBySubjects(study.id, [subject]);
  if (!reachable(patient, key.siteIds)) throw new DomainError('unknown_subject', { subject });
  return patient;
}
