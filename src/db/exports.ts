import type { Knex } from 'knex';
import { VALUE_CHANGE_ACTIONS } from '../domain/auditTrail.js';
import type { ExportRecord, ExportSnapshot, ExportStore, FieldChange, ReadScope } from '../domain/stores.js';
import { formAndVisit, visible } from './readPages.js';

/** Rows fetched from the cursor at a time: what the export holds in memory besides the answer's buffers. */
const ROWS_PER_FETCH = 500;

/**
 * The statement limit inside an export's snapshot. Its first FETCH sorts every record of the export
 * (by subject, visit, instance, form) before the first row comes, which for a large study takes longer
 * than the service's everyday limit (DB_STATEMENT_TIMEOUT_MS) allows; every later FETCH is quick.
 */
const EXPORT_STATEMENT_MS = 120_000;

/**
 * The records an export may see: the key's sites, no withdrawn patient (readPages.ts `visible`), no
 * hidden form, and only the forms asked for.
 */
function exportedRecords(trx: Knex, scope: ReadScope, formIds: number[]): Knex.QueryBuilder {
  const q = visible(
    trx('records as r').join('patients as p', 'p.id', 'r.patient_id').join('sites as s', 's.id', 'r.site_id'),
    scope, {}, 'r',
  ).whereIn('r.form_id', formIds);
  return formAndVisit(q, scope, {}, 'r');
}

/**
 * Each field's last audited change of a record's value, newest first per field, as one JSON object. Only value
 * rows count: a later step on a query about the field (which names the field too) changed no value.
 */
const LAST_CHANGES = `(select json_object_agg(c.field_code, json_build_object('auditId', c.id, 'at', c.at, 'author', c.author,
    'actorType', c.actor_type, 'actorId', c.actor_id, 'reason', c.reason))
  from (select distinct on (a.field_code) a.id, a.field_code, a.at, a.author, a.actor_type, a.actor_id, a.reason
        from audit_events a where a.record_id = r.id and a.field_code is not null and a.action = any(?::text[])
        order by a.field_code, a.id desc) c)`;

/** A record as an export's cursor gives it; `last_changes` only with the audit asked for. */
type ExportRecordRow = Pick<ExportRecord, 'subject' | 'site' | 'visit' | 'form' | 'instance' | 'status' | 'values' | 'tables'> & {
  not_done: ExportRecord['notDone']; updated_at: Date; last_changes?: Record<string, Omit<FieldChange, 'at'> & { at: string }> | null;
};

function toExportRecord(row: ExportRecordRow): ExportRecord {
  const record: ExportRecord = {
    subject: row.subject, site: row.site, visit: row.visit, form: row.form, instance: row.instance, status: row.status,
    values: row.values, notDone: row.not_done, tables: row.tables, updatedAt: row.updated_at,
  };
  if (row.last_changes !== undefined) {
    const changes = row.last_changes ?? {};
    record.lastChanges = Object.fromEntries(Object.entries(changes).map(([field, c]) => [field, { ...c, at: new Date(c.at) }]));
  }
  return record;
}

/**
 * One export's snapshot: a read-only REPEATABLE READ transaction, so the counts in the file's header and
 * the rows that follow them come from the same moment, however long the answer takes to send. The rows
 * come through an SQL cursor, `ROWS_PER_FETCH` at a time, so memory stays bounded whatever the study's
 * size, and each FETCH is an ordinary statement under the service's timeouts (a frozen database still
 * ends the export rather than holding it).
 */
async function openSnapshot(db: Knex): Promise<ExportSnapshot> {
  const trx = await db.transaction({ isolationLevel: 'repeatable read', readOnly: true });
  await trx.raw(`set local statement_timeout = ${EXPORT_STATEMENT_MS}`);
  let closed = false;
  let cursors = 0;
  return {
    async count(scope, formIds, table) {
      const q = exportedRecords(trx, scope, formIds);
      const [row] = table === undefined
        ? await q.count<{ n: number }[]>({ n: '*' })
        : await q.select<{ n: number }[]>(trx.raw('coalesce(sum(jsonb_array_length(r.tables -> ?)), 0) as n', [table]));
      return Number(row?.n ?? 0);
    },
    async authors(scope, formIds) {
      const rows = await trx('audit_events as a')
        .whereIn('a.record_id', exportedRecords(trx, scope, formIds).select('r.id')).whereIn('a.action', VALUE_CHANGE_ACTIONS)
        .distinctOn('a.actor_type', 'a.actor_id')
        .select<{ actor_type: string; actor_id: number | null; author: string }[]>('a.actor_type', 'a.actor_id', 'a.author')
        .orderBy([{ column: 'a.actor_type' }, { column: 'a.actor_id' }, { column: 'a.id', order: 'desc' }]);
      return rows.map((r) => ({ actorType: r.actor_type, actorId: r.actor_id, author: r.author }));
    },
    async lastModified(scope, formIds) {
      const [row] = await exportedRecords(trx, scope, formIds).max<{ at: Date | null }[]>({ at: 'r.updated_at' });
      return row?.at ?? null;
    },
    async *recordBatches(scope, formIds, { withAudit }) {
      const q = exportedRecords(trx, scope, formIds)
        .join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id')
        .select('p.subject', 's.number as site', 'v.code as visit', 'f.code as form', 'r.instance', 'r.status',
          'r.values', 'r.not_done', 'r.tables', 'r.updated_at')
        .orderBy([{ column: 'p.subject' }, { column: 'v.position' }, { column: 'r.instance' }, { column: 'f.position' }]);
      if (withAudit) q.select(trx.raw(`${LAST_CHANGES} as last_changes`, [[...VALUE_CHANGE_ACTIONS]]));
      const cursor = `export_rows_${(cursors += 1)}`;
      const { sql, bindings } = q.toSQL();
      await trx.raw(`declare ${cursor} no scroll cursor for ${sql}`, bindings);
      try {
        for (;;) {
          // The client's own read limit must outlast the server's for the first, sorting FETCH.
          const { rows } = await trx.raw<{ rows: ExportRecordRow[] }>(`fetch ${ROWS_PER_FETCH} from ${cursor}`).options({ query_timeout: EXPORT_STATEMENT_MS + 1_000 });
          if (rows.length > 0) yield rows.map(toExportRecord);
          if (rows.length < ROWS_PER_FETCH) break;
        }
      } finally {
        if (!closed) await trx.raw(`close ${cursor}`).catch(() => undefined);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      // Read only: nothing to keep, and a rollback ends it as surely after a broken-off answer.
      await trx.rollback().catch(() => undefined);
    },
  };
}

export function exportStore(db: Knex): ExportStore {
  return { openSnapshot: () => openSnapshot(db) };
}
