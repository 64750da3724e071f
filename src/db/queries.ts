import type { Knex } from 'knex';
import type { QueryStore } from '../domain/stores.js';
import { insertRows } from './insertRows.js';

const TABLE = 'queries';

interface QueryRecord { id: number; record_id: number; field_code: string; origin: string; check_code: string | null }

export function queryStore(db: Knex): QueryStore {
  return {
    async openForRecords(recordIds) {
      if (recordIds.length === 0) return [];
      // An answered query still waits to be closed: it stands until its cause is corrected or the site closes it.
      const rows = await db(TABLE).whereIn('record_id', recordIds).whereIn('status', ['open', 'answered'])
        .orderBy('id').select<QueryRecord[]>('id', 'record_id', 'field_code', 'origin', 'check_code');
      return rows.map((r) => ({ id: r.id, recordId: r.record_id, fieldCode: r.field_code, origin: r.origin, checkCode: r.check_code }));
    },
    async insert(queries) {
      if (queries.length === 0) return [];
      // The ids are drawn first, so that they are known in the order of the queries given (the order in which
      // an INSERT returns its rows is not defined), and the rows go in as one statement.
      // nextval gives bigints, which an array hands over as text.
      const { rows: [{ ids }] } = await db.raw<{ rows: [{ ids: string[] }] }>(`select array(select nextval(pg_get_serial_sequence('${TABLE}', 'id')) from generate_series(1, ?)) as ids`, [queries.length]);
      const drawn = ids.map(Number);
      await insertRows(db, TABLE, queries.map((q, i) => ({
        id: drawn[i], study_id: q.studyId, record_id: q.recordId, patient_id: q.patientId, site_id: q.siteId, field_code: q.fieldCode,
        origin: q.origin, check_code: q.checkCode, message: q.message, opened_by: q.openedBy,
      })));
      return drawn;
    },
    async close(ids) {
      if (ids.length === 0) return;
      await db(TABLE).whereIn('id', ids).update({ status: 'closed', closed_at: db.fn.now(), updated_at: db.fn.now() });
    },
  };
}
