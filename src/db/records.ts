import type { Knex } from 'knex';
import type { RecordKey, RecordStore, StoredRecord } from '../domain/stores.js';
import { insertRows } from './insertRows.js';

const TABLE = 'records';

/** A key of `records` as the table holds it. */
interface RecordKeyRecord { id: number; patient_id: number; visit_id: number; form_id: number; instance: number }
/** A row of `records` as COLUMNS reads it. */
interface RecordRecord extends RecordKeyRecord, Pick<StoredRecord, 'status' | 'values' | 'tables'> { not_done: StoredRecord['notDone'] }

function rowToRecord(r: RecordRecord): StoredRecord {
  return {
    id: r.id, patientId: r.patient_id, visitId: r.visit_id, formId: r.form_id, instance: r.instance,
    status: r.status, values: r.values, notDone: r.not_done, tables: r.tables,
  };
}

const keyColumns = (k: RecordKey) => ({ patient_id: k.patientId, visit_id: k.visitId, form_id: k.formId, instance: k.instance });

const COLUMNS = 'id, patient_id, visit_id, form_id, instance, status, values, not_done, tables';

export function recordStore(db: Knex): RecordStore {
  return {
    async findByKeys(keys, options = { lock: false }) {
      if (keys.length === 0) return [];
      // Four arrays rather than four parameters a key: 500 keys are one short statement. Locked rows are
      // taken in id order, the same order in every transaction, so two writers queue instead of deadlocking.
      const { rows } = await db.raw<{ rows: RecordRecord[] }>(
        `select ${COLUMNS} from ${TABLE} r
         where (patient_id, visit_id, form_id, instance) in (select * from unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::int[]))
         ${options.lock ? 'order by id for update' : ''}`,
        [keys.map((k) => k.patientId), keys.map((k) => k.visitId), keys.map((k) => k.formId), keys.map((k) => k.instance)],
      );
      return rows.map(rowToRecord);
    },
    async forPatient(patientId) {
      const rows = await db(TABLE).where({ patient_id: patientId }).select<RecordRecord[]>(COLUMNS.split(', '));
      return rows.map(rowToRecord);
    },
    async insertMany(records) {
      const rows = records.map((r) => ({
        ...keyColumns(r), study_id: r.studyId, site_id: r.siteId, source: r.source, status: r.status,
        values: r.values, not_done: r.notDone, tables: r.tables,
      }));
      const inserted = await insertRows<RecordKeyRecord>(db, TABLE, rows, 'on conflict (patient_id, visit_id, form_id, instance) do nothing returning id, patient_id, visit_id, form_id, instance');
      return inserted.map((r) => ({ id: r.id, patientId: r.patient_id, visitId: r.visit_id, formId: r.form_id, instance: r.instance }));
    },
    async updateMany(changes) {
      if (changes.length === 0) return;
      // `source` stays that of the first save (spec: RecordRead.source); an update never rewrites it.
      const json = JSON.stringify(changes.map((c) => ({ id: c.id, status: c.status, values: c.values, not_done: c.notDone, tables: c.tables })));
      await db.raw(
        `update ${TABLE} r set status = c.status, values = c.values, not_done = c.not_done, tables = c.tables, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as c(id bigint, status text, values jsonb, not_done jsonb, tables jsonb) where r.id = c.id`,
        [json],
      );
    },
  };
}
