import type { Knex } from 'knex';
import type { ActorRef } from '../domain/actor.js';
import type { QueryStatus, QueryStore } from '../domain/stores.js';
import { insertRows } from './insertRows.js';
import { type QueryPageRecord, queryReads, rowToQueryRead } from './readPages.js';
import { returnedRow } from './returnedRow.js';

const TABLE = 'queries';
const ANSWERS = 'query_answers';

interface QueryRecord { id: number; record_id: number; field_code: string; origin: string; check_code: string | null }
interface QueryStepRecord {
  id: number; study_id: number; record_id: number; patient_id: number; subject: string; site_id: number; form_id: number; field_code: string;
  origin: string; status: QueryStatus; opened_by_type: ActorRef['type'] | null; opened_by_id: number | null;
}

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
        opened_by_type: q.opener?.type ?? null, opened_by_id: q.opener?.id ?? null,
      })));
      return drawn;
    },
    async close(ids, closing) {
      if (ids.length === 0) return;
      await db(TABLE).whereIn('id', ids).whereNot('status', 'closed').update({
        status: 'closed', closed_at: db.fn.now(), updated_at: db.fn.now(), closed_by_type: closing.type, closed_by: closing.by, close_reason: closing.reason,
      });
    },
    async findForStep(studyId, id) {
      const row = await db(`${TABLE} as qu`).join('records as r', 'r.id', 'qu.record_id').join('patients as p', 'p.id', 'qu.patient_id')
        .where({ 'qu.study_id': studyId, 'qu.id': id }).forUpdate('qu')
        .first<QueryStepRecord | undefined>('qu.id', 'qu.study_id', 'qu.record_id', 'qu.patient_id', 'p.subject', 'qu.site_id', 'r.form_id', 'qu.field_code', 'qu.origin', 'qu.status',
          'qu.opened_by_type', 'qu.opened_by_id');
      return row && {
        id: row.id, studyId: row.study_id, recordId: row.record_id, patientId: row.patient_id, subject: row.subject, siteId: row.site_id,
        formId: row.form_id, fieldCode: row.field_code, origin: row.origin, status: row.status,
        opener: row.opened_by_type ? { type: row.opened_by_type, id: row.opened_by_id } : null,
      };
    },
    async answer(queryId, answer) {
      const { id } = returnedRow(await db(ANSWERS).insert({
        query_id: queryId, text: answer.text, author_type: answer.author.type, author_id: answer.author.id, author: answer.authorName,
      }).returning<{ id: number }[]>('id'));
      await db(TABLE).where({ id: queryId }).update({ status: 'answered', updated_at: db.fn.now() });
      return id;
    },
    async read(id) {
      const row = await queryReads(db).where('qu.id', id).first<QueryPageRecord | undefined>();
      // Called with the id of a query this transaction has just raised or answered: none is a bug.
      if (row === undefined) throw new Error(`Query ${id} was not found to read back`);
      return rowToQueryRead(row);
    },
  };
}
