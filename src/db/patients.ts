import type { Knex } from 'knex';
import { DomainError } from '../domain/errors.js';
import type { Patient, PatientStore } from '../domain/stores.js';
import { isPgError, UNIQUE_VIOLATION } from './pgErrors.js';

const TABLE = 'patients';

/** A row of `patients` as the table holds it (the columns no store reads left out). */
interface PatientRecord {
  id: number; study_id: number; site_id: number; subject: string; sex: string; birth_year: number; enrolled_on: string; status: string;
  data_use_withdrawn_at: Date | null; fhir_identity: Patient['fhirIdentity'];
}
interface ConsentRecord { given_on: string | null; withdrawn_on: string | null; data_use_withdrawn: boolean }

function rowToPatient(r: PatientRecord): Patient {
  return {
    id: r.id, studyId: r.study_id, siteId: r.site_id, subject: r.subject, sex: r.sex, birthYear: r.birth_year,
    enrolledOn: r.enrolled_on, status: r.status, dataUseWithdrawnAt: r.data_use_withdrawn_at, fhirIdentity: r.fhir_identity,
  };
}

export function patientStore(db: Knex): PatientStore {
  return {
    async findBySubject(studyId, subject) {
      const row = await db(TABLE).where({ study_id: studyId, subject }).first<PatientRecord | undefined>();
      return row ? rowToPatient(row) : undefined;
    },
    async insert(patient) {
      try {
        // ON CONFLICT rather than a caught 23505: the transaction stays usable, so an enrolment can try the next number.
        const [row] = await db(TABLE).insert({
          study_id: patient.studyId, site_id: patient.siteId, subject: patient.subject, sex: patient.sex,
          birth_year: patient.birthYear, enrolled_on: patient.enrolledOn,
        }).onConflict(['study_id', 'subject']).ignore().returning<PatientRecord[]>('*');
        if (!row) throw new DomainError('subject_taken', { subject: patient.subject });
        return rowToPatient(row);
      } catch (error) {
        if (isPgError(error, UNIQUE_VIOLATION)) throw new DomainError('subject_taken', { subject: patient.subject });
        throw error;
      }
    },
    async findBySubjects(studyId, subjects) {
      // PostgreSQL text cannot hold NUL, so no patient has such a subject; sending it would fail the whole query.
      subjects = subjects.filter((s) => !s.includes('\u0000'));
      if (subjects.length === 0) return [];
      const rows = await db(`${TABLE} as p`)
        .where('p.study_id', studyId)
        .whereIn('p.subject', subjects)
        .select<(PatientRecord & { consent: ConsentRecord | null })[]>('p.*', db.raw(`(select row_to_json(c) from (select given_on, withdrawn_on, data_use_withdrawn from consents
          where patient_id = p.id order by id desc limit 1) c) as consent`));
      return rows.map((r) => ({
        ...rowToPatient(r),
        consent: r.consent ? { givenOn: r.consent.given_on, withdrawnOn: r.consent.withdrawn_on, dataUseWithdrawn: r.consent.data_use_withdrawn } : undefined,
      }));
    },
    async subjectExists(studyId, subject) {
      return Boolean(await db(TABLE).where({ study_id: studyId, subject }).first('id'));
    },
    async latestConsent(patientId) {
      const row = await db('consents').where({ patient_id: patientId }).orderBy('id', 'desc').first<ConsentRecord | undefined>();
      return row ? { givenOn: row.given_on, withdrawnOn: row.withdrawn_on, dataUseWithdrawn: row.data_use_withdrawn } : undefined;
    },
    async insertConsent(patientId, consent) {
      await db('consents').insert({
        patient_id: patientId, given_on: consent.givenOn, withdrawn_on: consent.withdrawnOn, data_use_withdrawn: consent.dataUseWithdrawn,
      });
    },
    async setStatus(patientId, status) {
      await db(TABLE).where({ id: patientId }).update({ status, updated_at: db.fn.now() });
    },
    async markDataUseWithdrawn(patient) {
      await db(TABLE).where({ id: patient.id }).update({ data_use_withdrawn_at: db.fn.now(), updated_at: db.fn.now() });
      await db('removals').insert({ study_id: patient.studyId, patient_id: patient.id, reason: 'consent_withdrawn' });
    },
  };
}
