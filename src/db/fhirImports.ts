import type { Knex } from 'knex';
import type { FhirImportStore, StoredFhirImport } from '../domain/stores.js';
import { jsonParameter } from './jsonParameter.js';
import { returnedRow } from './returnedRow.js';

const TABLE = 'fhir_imports';

/** A row of `fhir_imports` as the table holds it (the columns no store reads left out). */
interface FhirImportRecord extends Pick<StoredFhirImport, 'id' | 'number' | 'mode' | 'status' | 'counts' | 'items'> {
  study_id: number; patient_id: number; fhir_identity: StoredFhirImport['fhirIdentity']; decided_at: Date | null; decided_by: number | null;
}

function rowToImport(row: FhirImportRecord): StoredFhirImport {
  return {
    id: row.id, studyId: row.study_id, patientId: row.patient_id, number: row.number, mode: row.mode, status: row.status,
    counts: row.counts, fhirIdentity: row.fhir_identity, decidedAt: row.decided_at, decidedBy: row.decided_by, items: row.items,
  };
}

export function fhirImportStore(db: Knex): FhirImportStore {
  return {
    async nextNumber(patientId) {
      await db('patients').where({ id: patientId }).forUpdate().first('id');
      const row = await db(TABLE).where({ patient_id: patientId }).max('number as n').first<{ n: number | null } | undefined>();
      return Number(row?.n ?? 0) + 1;
    },
    async insert(row, items) {
      // The items go in the import's own row, as one json value (see the migration keeping them there).
      const { id } = returnedRow(await db(TABLE).insert({
        study_id: row.studyId, patient_id: row.patientId, number: row.number, mode: row.mode, status: row.status,
        api_key_id: row.apiKeyId, counts: JSON.stringify(row.counts), fhir_identity: JSON.stringify(row.fhirIdentity), content_hash: row.contentHash,
        unblinded_team_items: row.unblindedTeamItems,
        items: db.raw('?::json', [jsonParameter(items)]),
      }).returning<{ id: number }[]>('id'));
      return id;
    },
    async findProposedByContent(patientId, mode, contentHash) {
      await db('patients').where({ id: patientId }).forUpdate().first('id');
      const row = await db(TABLE).where({ patient_id: patientId, mode, content_hash: contentHash, status: 'proposed' }).first<FhirImportRecord | undefined>();
      return row && rowToImport(row);
    },
    async findForDecision(patientId, number) {
      const row = await db(TABLE).where({ patient_id: patientId, number }).forUpdate().first<FhirImportRecord | undefined>();
      return row && rowToImport(row);
    },
    async updateItems(importId, changes) {
      // One statement however many items change: each changed item gets its new state, row and outcome, in its
      // place, and a picked tie the value and resource of its candidate.
      const rows = changes.map(({ picked, ...change }) => ({ ...change, value: picked?.value ?? null, picked: picked?.resource ?? null }));
      await db.raw(
        `update ${TABLE} f set items = (
           select json_agg(case when c.position is null then e.item else (e.item::jsonb || jsonb_build_object('state', c.state, 'row', c.row, 'outcome', c.outcome)
               || case when c.picked is null then '{}'::jsonb else jsonb_build_object('value', c.value, 'reason', null, 'picked', c.picked) end)::json end
             order by e.ord)
           from json_array_elements(f.items) with ordinality as e(item, ord)
           left join json_to_recordset(?::json) as c(position integer, state text, row integer, outcome text, value text, picked text) on c.position = e.ord - 1
         ) where f.id = ?`,
        [JSON.stringify(rows), importId],
      );
    },
    async decide(importId, decision) {
      await db(TABLE).where({ id: importId }).update({
        status: decision.status, decided_at: db.fn.now(), decided_by: decision.decidedBy, counts: JSON.stringify(decision.counts),
        rejection_reason: decision.reason ?? null,
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
