import type { Knex } from 'knex';
import type { RecordKey, RecordStore, StoredRecord } from '../domain/stores.js';

export const TABLE = 'records';

function rowToRecord(r: Record<string, any>): StoredRecord {
  return {
    id: r.id, patientId: r.patient_id, visitId: r.visit_id, formId: r.form_id, instance: r.instance,
    status: r.status, values: r.values, notDone: r.not_done, tables: r.tables,
  };
}

const keyColumns = (k: RecordKey) => ({ patient_id: k.patientId, visit_id: k.visitId, form_id: k.formId, instance: k.instance });

export function recordStore(db: Knex): RecordStore {
  return {
    async findByKeys(keys) {
      if (keys.length === 0) return [];
      const rows = await db(TABLE)
        .whereIn(['patient_id', 'visit_id', 'form_id', 'instance'], keys.map((k) => [k.patientId, k.visitId, k.formId, k.instance]))
        .select('id', 'patient_id', 'visit_id', 'form_id', 'instance', 'status', 'values', 'not_done', 'tables');
      return rows.map(rowToRecord);
    },
    async forPatient(patientId) {
      const rows = await db(TABLE).where({ patient_id: patientId })
        .select('id', 'patient_id', 'visit_id', 'form_id', 'instance', 'status', 'values', 'not_done', 'tables');
      return rows.map(rowToRecord);
    },
    async lockByKey(key) {
      const row = await db(TABLE).where(keyColumns(key)).forUpdate().first();
      return row ? rowToRecord(row) : undefined;
    },
    async insertIfAbsent(record) {
      const rows = await db(TABLE)
        .insert({
          ...keyColumns(record), study_id: record.studyId, site_id: record.siteId, source: record.source, status: record.status,
          values: JSON.stringify(record.values), not_done: JSON.stringify(record.notDone), tables: JSON.stringify(record.tables),
        })
        .onConflict(['patient_id', 'visit_id', 'form_id', 'instance'])
        .ignore()
        .returning('id');
      return rows[0]?.id;
    },
    async update(id, changes) {
      // `source` stays that of the first save (spec: RecordRead.source); an update never rewrites it.
      await db(TABLE).where({ id }).update({
        status: changes.status, values: JSON.stringify(changes.values),
        not_done: JSON.stringify(changes.notDone), tables: JSON.stringify(changes.tables), updated_at: db.fn.now(),
      });
    },
  };
}
