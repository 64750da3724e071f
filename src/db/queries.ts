import type { Knex } from 'knex';
import type { QueryStore } from '../domain/stores.js';

export const TABLE = 'queries';

export function queryStore(db: Knex): QueryStore {
  return {
    async openForRecord(recordId) {
      // An answered query still waits to be closed: it stands until its cause is corrected or the site closes it.
      const rows = await db(TABLE).where({ record_id: recordId }).whereIn('status', ['open', 'answered']).select('id', 'field_code', 'origin', 'check_code');
      return rows.map((r) => ({ id: r.id, fieldCode: r.field_code, origin: r.origin, checkCode: r.check_code }));
    },
    async insert(queries) {
      if (queries.length === 0) return [];
      const rows = await db(TABLE).insert(queries.map((q) => ({
        study_id: q.studyId, record_id: q.recordId, patient_id: q.patientId, site_id: q.siteId, field_code: q.fieldCode,
        origin: q.origin, check_code: q.checkCode, message: q.message, opened_by: q.openedBy,
      }))).returning('id');
      return rows.map((r) => r.id);
    },
    async close(ids) {
      if (ids.length === 0) return;
      await db(TABLE).whereIn('id', ids).update({ status: 'closed', closed_at: db.fn.now(), updated_at: db.fn.now() });
    },
  };
}
