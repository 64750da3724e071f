import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import type { AuditStore, Patient, PatientStore, StudyStore, WebhookStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';
import { studyEvent } from '../webhooks/webhookEvents.js';
import { latestToday } from './enrolPatient.js';

export type ConsentChange = { given: string } | { withdrawn: string; dataUse: boolean };

/** The day of a change: a real calendar day, not in the future anywhere on earth, not before the patient's birth year. */
function checkConsentDate(date: string, patient: Patient, today: string): void {
  const params = { subject: patient.subject, date, birth_year: patient.birthYear };
  const day = new Date(`${date}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== date) {
    throw new DomainError('consent_date_invalid', params);
  }
  if (date > today) throw new DomainError('consent_date_in_future', params);
  // A parent may consent for a newborn, so the birth year itself is allowed; the day of birth is not known.
  if (Number(date.slice(0, 4)) < patient.birthYear) throw new DomainError('consent_date_before_birth', params);
}

/**
 * Records that a patient gave or withdrew consent. A withdrawal makes an enrolled patient `withdrawn` (left the
 * study early, the data collected so far kept), and consent given again makes them `enrolled` again. A withdrawal
 * that covers the use of the data already collected also hides the patient from every read call from now on and
 * leaves a removal notice, so sponsors that loaded the data learn to delete it. The command line and the patient card
 * of the portal both come here (issue 19, point 2), so the same date rules hold for both.
 * @param today - the latest date that is today somewhere on earth; a test may fix it
 */
export async function recordConsent(
  stores: { studies: StudyStore; patients: PatientStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  input: { study: string; subject: string; change: ConsentChange },
  today = latestToday(),
): Promise<{ subject: string; consent: 'given' | 'withdrawn'; dataUseWithdrawn: boolean }> {
  const study = await requireStudy(stores.studies, input.study);
  const patient = await stores.patients.findBySubject(study.id, input.subject);
  if (!patient) throw new DomainError('unknown_subject', { subject: input.subject, study: study.code, variant: 'no_key' });
  const change = input.change;
  checkConsentDate('given' in change ? change.given : change.withdrawn, patient, today);
  const latest = await stores.patients.latestConsent(patient.id);
  if ('given' in change) {
    // Consent given again after a withdrawal starts on its day or later: dated before it, the consent gate would
    // open on the very consent the patient withdrew.
    if (latest?.withdrawnOn && change.given < latest.withdrawnOn) {
      throw new DomainError('consent_dates', { subject: patient.subject, withdrawn_on: latest.withdrawnOn, variant: 'given_again' });
    }
    await stores.patients.insertConsent(patient.id, { givenOn: change.given, withdrawnOn: null, dataUseWithdrawn: false });
    // Consent given again brings a patient who had left the study back into it.
    if (patient.status === 'withdrawn') await stores.patients.setStatus(patient.id, 'enrolled');
  } else {
    // A patient who withdrew consent may later also withdraw the use of the data collected so far.
    const extendsToDataUse = Boolean(latest?.withdrawnOn) && change.dataUse && !latest?.dataUseWithdrawn;
    if (!latest?.givenOn || (latest.withdrawnOn && !extendsToDataUse)) throw new DomainError('consent_not_given', { subject: patient.subject });
    if (change.withdrawn < latest.givenOn) throw new DomainError('consent_dates', { subject: patient.subject });
    await stores.patients.insertConsent(patient.id, { givenOn: latest.givenOn, withdrawnOn: latest.withdrawnOn ?? change.withdrawn, dataUseWithdrawn: change.dataUse });
    if (change.dataUse && !patient.dataUseWithdrawnAt) await stores.patients.markDataUseWithdrawn(patient);
    // A patient who withdrew consent has left the study early: the patients read says so (PatientStatus).
    if (patient.status === 'enrolled') await stores.patients.setStatus(patient.id, 'withdrawn');
  }
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'given' in change ? 'consent.given' : 'consent.withdrawn',
    patientId: patient.id,
    details: 'given' in change ? { given_on: change.given } : { withdrawn_on: change.withdrawn, data_use: change.dataUse },
  })]);
  if (!('given' in change)) {
    const site = (await stores.studies.sites(study)).find((s) => s.id === patient.siteId)!;
    await stores.webhooks.publish([studyEvent(study, 'consent.withdrawn', { subject: patient.subject, site: site.number })]);
  }
  return { subject: patient.subject, consent: 'given' in change ? 'given' : 'withdrawn', dataUseWithdrawn: !('given' in change) && change.dataUse };
}
