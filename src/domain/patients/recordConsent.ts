import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import type { AuditStore, PatientStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';

export type ConsentChange = { given: string } | { withdrawn: string; dataUse: boolean };

/**
 * Records that a patient gave or withdrew consent. A withdrawal that covers the use of the data
 * already collected hides the patient from every read call from now on and leaves a removal
 * notice, so sponsors that loaded the data learn to delete it.
 */
export async function recordConsent(
  stores: { studies: StudyStore; patients: PatientStore; audit: AuditStore },
  actor: Actor,
  input: { study: string; subject: string; change: ConsentChange },
): Promise<{ subject: string; consent: 'given' | 'withdrawn'; dataUseWithdrawn: boolean }> {
  const study = await requireStudy(stores.studies, input.study);
  const patient = await stores.patients.findBySubject(study.id, input.subject);
  if (!patient) throw new DomainError('unknown_subject', { subject: input.subject, study: study.code, variant: 'no_key' });
  const latest = await stores.patients.latestConsent(patient.id);
  const change = input.change;
  if ('given' in change) {
    await stores.patients.insertConsent(patient.id, { givenOn: change.given, withdrawnOn: null, dataUseWithdrawn: false });
  } else {
    // A patient who withdrew consent may later also withdraw the use of the data collected so far.
    const extendsToDataUse = Boolean(latest?.withdrawnOn) && change.dataUse && !latest?.dataUseWithdrawn;
    if (!latest?.givenOn || (latest.withdrawnOn && !extendsToDataUse)) throw new DomainError('consent_not_given', { subject: patient.subject });
    if (change.withdrawn < latest.givenOn) throw new DomainError('consent_dates', { subject: patient.subject });
    await stores.patients.insertConsent(patient.id, { givenOn: latest.givenOn, withdrawnOn: latest.withdrawnOn ?? change.withdrawn, dataUseWithdrawn: change.dataUse });
    if (change.dataUse && !patient.dataUseWithdrawnAt) await stores.patients.markDataUseWithdrawn(patient);
  }
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'given' in change ? 'consent.given' : 'consent.withdrawn',
    patientId: patient.id,
    details: 'given' in change ? { given_on: change.given } : { withdrawn_on: change.withdrawn, data_use: change.dataUse },
  })]);
  return { subject: patient.subject, consent: 'given' in change ? 'given' : 'withdrawn', dataUseWithdrawn: !('given' in change) && change.dataUse };
}
