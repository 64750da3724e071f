import type { Actor } from '../actor.js';
import type { KeyContext } from '../apiKeys/keyContext.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError, isDomainError, type FieldError } from '../errors.js';
import type { AuditStore, Patient, PatientStore, Site, Study, StudyStore, WebhookStore } from '../stores.js';
import { studyEvent } from '../webhooks/webhookEvents.js';
import { carriesSite, subjectNumber } from './subjectNumber.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

export interface Enrolment {
  site: string;
  sex: 'female' | 'male' | 'other' | 'unknown';
  birth_year: number;
  enrolled_on: string;
  subject?: string;
}

const OLDEST_AGE = 120;
/** UTC+14 (Kiribati) is the earliest time zone: a date is "in the future" only once it is in the future everywhere. */
const EARLIEST_ZONE_MS = 14 * 3600 * 1000;

/**
 * The latest calendar date that is today somewhere on earth. A site enrols on its local date, which
 * east of Greenwich is a day ahead of UTC for part of the day (Moscow until 03:00, Vladivostok until 10:00).
 */
export function latestToday(now = new Date()): string {
  return new Date(now.getTime() + EARLIEST_ZONE_MS).toISOString().slice(0, 10);
}

/** Checks the enrolment data a schema cannot: a real date, not in the future, a plausible birth year. */
function enrolmentErrors(input: Enrolment, today: string): FieldError[] {
  const errors: FieldError[] = [];
  const date = new Date(`${input.enrolled_on}T00:00:00Z`);
  if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== input.enrolled_on) {
    errors.push({ pointer: '/enrolled_on', code: 'invalid_date' });
  } else if (input.enrolled_on > today) {
    errors.push({ pointer: '/enrolled_on', code: 'date_in_future' });
  }
  const year = Number(input.enrolled_on.slice(0, 4));
  if (input.birth_year > year || input.birth_year < year - OLDEST_AGE) {
    errors.push({ pointer: '/birth_year', code: 'birth_year_implausible', params: { oldest: OLDEST_AGE } });
  }
  return errors;
}

/**
 * Enrols a patient at one of the key's sites (interface description, "Enrolment rules"). Without a
 * subject the site's next number is taken under a row lock, skipping numbers already used, so many
 * enrolments at once from several processes never share a number; a requested subject is used if free.
 */
export async function enrolPatient(
  stores: { studies: StudyStore; patients: PatientStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  key: KeyContext,
  study: Study,
  input: Enrolment,
  today = latestToday(),
): Promise<{ subject: string; site: string }> {
  requireUnlocked(stores.audit, study);
  if (!study.enrolmentOpen) throw new DomainError('enrolment_closed');
  const site = (await stores.studies.sites(study)).find((s) => s.number === input.site && key.siteIds.includes(s.id));
  if (!site) throw new DomainError('unknown_site', { site: input.site }, [{ pointer: '/site', code: 'unknown_site', params: { site: input.site } }]);
  const errors = enrolmentErrors(input, today);
  if (errors.length > 0) throw new DomainError('invalid_body', {}, errors);
  const row = { studyId: study.id, siteId: site.id, sex: input.sex, birthYear: input.birth_year, enrolledOn: input.enrolled_on };
  let patient: Patient;
  if (input.subject !== undefined) {
    const subject = input.subject;
    if (!carriesSite(study.subjectFormat, site.number, subject)) {
      const params = { subject, site: site.number, format: study.subjectFormat };
      throw new DomainError('subject_other_site', params, [{ pointer: '/subject', code: 'subject_other_site', params }]);
    }
    patient = await stores.patients.insert({ ...row, subject }).catch((error: unknown) => {
      if (isDomainError(error) && error.code === 'subject_taken') {
        throw new DomainError('subject_taken', { subject }, [{ pointer: '/subject', code: 'subject_taken', params: { subject } }]);
      }
      throw error;
    });
  } else {
    patient = await insertWithNextNumber(stores, study, site, row);
  }
  const subject = patient.subject;
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'patient.enrolled',
    patientId: patient.id,
    details: { subject, site: site.number, sex: input.sex, enrolled_on: input.enrolled_on, assigned: input.subject === undefined },
  })]);
  await stores.webhooks.publish([studyEvent(study, 'patient.enrolled', { subject, site: site.number })]);
  return { subject, site: site.number };
}

/**
 * Inserts the patient under the site's next free number. Numbers taken by requested subjects are
 * skipped, including one inserted by a concurrent enrolment after the check: the store's insert then
 * reports `subject_taken` without failing the transaction (ON CONFLICT), and the next number is tried.
 */
async function insertWithNextNumber(
  stores: { studies: StudyStore; patients: PatientStore },
  study: Study,
  site: Site,
  row: Omit<Patient, 'id' | 'status' | 'dataUseWithdrawnAt' | 'fhirIdentity' | 'subject'>,
): Promise<Patient> {
  for (;;) {
    const subject = subjectNumber(study.subjectFormat, site.number, await stores.studies.takeNextSeq(site.id));
    if (await stores.patients.subjectExists(study.id, subject)) continue;
    try {
      return await stores.patients.insert({ ...row, subject });
    } catch (error) {
      // Safe to go on in the transaction: ON CONFLICT reported the taken number, no statement failed.
      if (!(isDomainError(error) && error.code === 'subject_taken')) throw error;
    }
  }
}
