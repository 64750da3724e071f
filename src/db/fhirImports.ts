import type { Knex } from 'knex';
import type { FhirImportItem } from '../domain/fhir/fhirImportItem.js';
import type { FhirImportStore, StoredFhirImport } from '../domain/stores.js';
import { insertRows } from './insertRows.js';

export const TABLE = 'fhir_imports';
const ITEMS = 'fhir_import_items';

function itemToRow(importId: number, item: FhirImportItem, position: number) {
  return {
    import_id: importId, position, resource: item.resource, code: item.code, form_code: item.form, field_code: item.field,
    row: item.row, visit_code: item.visit, instance: item.instance, value: item.value, unit: item.unit,
    original: item.original, effective: item.effective, saved_value: item.saved_value, state: item.state,
    reason: item.reason, chosen_by: item.chosen_by, candidates: item.candidates,
  };
}

function rowToItem(r: Record<string, any>): FhirImportItem {
  return {
    resource: r.resource, code: r.code, form: r.form_code, field: r.field_code, row: r.row, visit: r.visit_code, instance: r.instance,
    value: r.value, unit: r.unit, original: r.original, effective: r.effective, saved_value: r.saved_value, state: r.state,
    reason: r.reason, chosen_by: r.chosen_by, candidates: r.candidates,
  };
}

export function fhirImportStore(db: Knex): FhirImportStore {
  return {
    async nextNumber(patientId) {
      await db('patients').where({ id: patientId }).forUpdate().first('id');
      const row = await db(TABLE).where({ patient_id: patientId }).max('number as n').first();
      return Number(row?.n ?? 0) + 1;
    },
    async insert(row, items) {
      const [{ id }] = await db(TABLE).insert({
        study_id: row.studyId, patient_id: row.patientId, number: row.number, mode: row.mode, status: row.status,
        api_key_id: row.apiKeyId, counts: JSON.stringify(row.counts), fhir_identity: JSON.stringify(row.fhirIdentity),
      }).returning('id');
      // One statement however many items: a 5 MB file can give thousands.
      await insertRows(db, ITEMS, items.map((item, position) => itemToRow(id, item, position)));
      return id;
    },
    async findForDecision(patientId, number): Promise<StoredFhirImport | undefined> {
      const row = await db(TABLE).where({ patient_id: patientId, number }).forUpdate().first();
      if (!row) return undefined;
      const items = await db(ITEMS).where({ import_id: row.id }).orderBy('position');
      return {
        id: row.id, studyId: row.study_id, patientId: row.patient_id, number: row.number, mode: row.mode, status: row.status,
        counts: row.counts, fhirIdentity: row.fhir_identity, decidedAt: row.decided_at, decidedBy: row.decided_by, items: items.map(rowToItem),
      };
    },
    async updateItems(importId, changes) {
      // One statement per thousand items: confirming a large import changes hundreds at once.
      for (let i = 0; i < changes.length; i += 1000) {
        const slice = changes.slice(i, i + 1000);
        await db.raw(
          `update ${ITEMS} as i set state = v.state, row = v.row::integer
             from (values ${slice.map(() => '(?::integer, ?::text, ?::text)').join(', ')}) as v(position, state, row)
            where i.import_id = ? and i.position = v.position`,
          [...slice.flatMap((c) => [c.position, c.state, c.row === null ? null : String(c.row)]), importId],
        );
      }
    },
    async decide(importId, decision) {
      await db(TABLE).where({ id: importId }).update({
        status: decision.status, decided_at: db.fn.now(), decided_by: decision.decidedBy, counts: JSON.stringify(decision.counts),
      });
    },
    async linkPatientIdentity(patientId, identity) {
      // Only the first link counts: a later file must match it, never replace it. `updated_at` stays, since
      // no read call shows the identity, so incremental readers have nothing new to fetch.
      const linked = await db('patients').where({ id: patientId }).whereNull('fhir_identity')
        .update({ fhir_identity: JSON.stringify(identity) });
      return linked === 1;
    },
  };
}
