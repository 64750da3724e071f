import type { Knex } from 'knex';
import { AUDIT_ACTIONS_FOR_KEYS, FHIR_IMPORT_ACTIONS, type AuditReadRow, type AuditReadStore } from '../domain/reads/auditRows.js';
import type { AuditEventRecord } from './auditEvents.js';
import { formAndVisit, keyset, visible } from './readPages.js';

/** An audit row with the names of its patient's site, visit and form. */
interface AuditPageRecord extends AuditEventRecord {
  patient_id: number; prev_hash: string; hash: string; subject: string; site: string; visit: string | null; form: string | null; instance: number | null;
}

/**
 * The audit read's queries (issue 22.3). A page is one keyset query over the study's rows in id order
 * (the `(study_id, id)` index), with the read calls' visibility rules in the SQL: the patient's site
 * among the key's, no patient who withdrew consent to data use, no row about a hidden form's record.
 * Rows about no patient are left out by the inner join, private ones by the action list.
 */
export function auditReadStore(db: Knex): AuditReadStore {
  return {
    async auditPage(scope, filters, page) {
      const q = visible(
        db('audit_events as a').join('patients as p', 'p.id', 'a.patient_id').join('sites as s', 's.id', 'p.site_id')
          .leftJoin('records as r', 'r.id', 'a.record_id').leftJoin('visits as v', 'v.id', 'r.visit_id').leftJoin('forms as f', 'f.id', 'r.form_id'),
        scope, filters, 'p',
      ).where('a.study_id', scope.studyId).whereIn('a.action', AUDIT_ACTIONS_FOR_KEYS)
        .select<AuditPageRecord[]>('a.id', 'a.at', 'a.author', 'a.reason', 'a.action', 'p.subject', 's.number as site', 'v.code as visit', 'f.code as form',
          'r.instance', 'a.field_code', 'a.old_value', 'a.new_value', 'a.details', 'a.actor_type', 'a.actor_id', 'a.study_id', 'a.patient_id',
          'a.record_id', 'a.prev_hash', 'a.hash');
      // A visit or form filter keeps only rows about a record; without one, rows about no record (enrolment,
      // consent, imports) stay, and only a hidden form's records are left out.
      if (filters.visitId !== undefined || filters.formId !== undefined) formAndVisit(q, scope, filters, 'r');
      else if (scope.hiddenFormIds.length > 0) q.where((w) => { w.whereNull('a.record_id').orWhereNotIn('r.form_id', scope.hiddenFormIds); });
      // A row about a whole FHIR import counts its items and names the positions decided, hidden ones included:
      // none about an import holding an item on an unblinded-team form (`fhir_imports.unblinded_team_items`),
      // the one its details name (`import_id`).
      if (scope.hiddenFormIds.length > 0) {
        q.leftJoin('fhir_imports as hidden_import', (on) => {
          on.on(db.raw('hidden_import.id = (a.details->>\'import_id\')::int')).andOnVal('hidden_import.unblinded_team_items', true)
            .andOnIn('a.action', [...FHIR_IMPORT_ACTIONS]);
        }).whereNull('hidden_import.id');
      }
      const rows = await keyset(q, 'a.id', page, 'a.at');
      const positions = await chainPositions(db, scope.studyId, rows.map((r) => r.id));
      return rows.map((r) => ({
        id: r.id, position: positions.get(r.id)!, at: new Date(r.at).toISOString(), author: r.author, reason: r.reason, action: r.action,
        subject: r.subject, site: r.site, visit: r.visit ?? null, form: r.form ?? null, instance: r.instance ?? null, fieldCode: r.field_code,
        oldValue: r.old_value, newValue: r.new_value, details: r.details, actorType: r.actor_type, actorId: r.actor_id, studyId: r.study_id,
        patientId: r.patient_id, recordId: r.record_id, prevHash: r.prev_hash, hash: r.hash,
      } satisfies AuditReadRow));
    },
  };
}

/**
 * Each row's place in its study's chain, from 1: the study's rows before the page's first, counted on the
 * `(study_id, id)` index, plus the row's rank among the study's rows from the page's first to its last
 * (the rows the key does not see included). A page deep in a long trail pays for counting what lies before it.
 */
async function chainPositions(db: Knex, studyId: number, ids: number[]): Promise<Map<number, number>> {
  const [first, last] = [ids[0], ids.at(-1)];
  if (first === undefined || last === undefined) return new Map();
  const ranked = db('audit_events').where({ study_id: studyId }).whereBetween('id', [first, last]).select('id', db.raw(
    '(select count(*) from audit_events where study_id = ? and id < ?) + row_number() over (order by id) as position', [studyId, first],
  ));
  const rows = await db.from(ranked.as('ranked')).whereIn('id', ids).select<{ id: number; position: number }[]>('id', 'position');
  return new Map(rows.map((r) => [Number(r.id), Number(r.position)]));
}
