import type { Knex } from 'knex';
import type { PageRequest, QueryReadRow, ReadFilters, ReadScope, ReadStore, RecordReadRow, RemovalRow } from '../domain/stores.js';

interface PatientPageRecord { id: number; subject: string; site: string; sex: string; enrolled_on: string; status: string; updated_at: Date }
export type QueryPageRecord = Omit<QueryReadRow, 'field' | 'openedAt' | 'closedAt' | 'updatedAt' | 'openedBy' | 'openedByType' | 'closedBy' | 'closedByType' | 'closeReason'> & {
  field_code: string; opened_at: Date; closed_at: Date | null; updated_at: Date; opened_by: string; opened_by_type: string | null; closed_by: string | null;
  closed_by_type: string | null; close_reason: string | null;
};
type RemovalRecord = Omit<RemovalRow, 'removedAt'> & { removed_at: Date };

/** How far the watermark is set back beyond the oldest open transaction; rows within it may come twice, never not at all. */
const WATERMARK_MARGIN_MS = 1000;

/** A timestamp written as Date.toISOString() does (milliseconds cut, not rounded, as pg's parser does). */
const ISO_INSTANT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * The read calls' queries. Each page is one indexed keyset query (`id > after order by id limit n`),
 * so page 200 costs what page 1 costs, and the visibility rules (sites, blinded forms, withdrawn
 * patients) are part of the SQL, never applied after loading.
 *
 * The site and form filters replace the key's sites and hidden forms in the SQL instead of being
 * added beside them: given `site_id in (1, 2) and site_id = 2`, PostgreSQL multiplies the two
 * selectivities, misjudges the row count and sorts the whole site instead of walking the
 * `(study_id, site_id, id)` index in id order (test/integration/readPages.test.ts runs EXPLAIN).
 */
export function visible<Q extends Knex.QueryBuilder>(q: Q, scope: ReadScope, filters: ReadFilters, alias: string): Q {
  q.where(`${alias}.study_id`, scope.studyId).whereIn(`${alias}.site_id`, sitesOf(scope, filters)).whereNull('p.data_use_withdrawn_at');
  if (filters.subject !== undefined) q.where('p.subject', filters.subject);
  return q;
}

/** The key's sites, or the filtered one; the domain has checked it is one of them, and an id outside them shows nothing. */
function sitesOf(scope: ReadScope, filters: ReadFilters): number[] {
  return filters.siteId === undefined ? scope.siteIds : scope.siteIds.filter((id) => id === filters.siteId);
}

/** Forms of the unblinded team stay hidden whatever the form filter asks for. */
export function formAndVisit<Q extends Knex.QueryBuilder>(q: Q, scope: ReadScope, filters: ReadFilters, alias: string): Q {
  if (filters.formId !== undefined) {
    if (scope.hiddenFormIds.includes(filters.formId)) q.whereRaw('false');
    else q.where(`${alias}.form_id`, filters.formId);
  } else if (scope.hiddenFormIds.length > 0) {
    q.whereNotIn(`${alias}.form_id`, scope.hiddenFormIds);
  }
  if (filters.visitId !== undefined) q.where(`${alias}.visit_id`, filters.visitId);
  return q;
}

/** `updatedColumn` is a column or an SQL expression of the calling code, never a client's text. */
export function keyset<Q extends Knex.QueryBuilder>(q: Q, column: string, page: PageRequest, updatedColumn: string): Q {
  // A paging token is readable JSON a client can rewrite: compared as bigint, an id beyond an `integer` column
  // finds no row instead of failing the query (issue 21.6); PostgreSQL still uses the column's index.
  q.whereRaw('?? > ?::bigint', [column, page.afterId]).orderBy(column).limit(page.limit);
  if (page.updatedSince) q.whereRaw(`${updatedColumn} >= ?`, [page.updatedSince]);
  return q;
}

/**
 * Queries as the read calls show them, each with its thread of answers gathered by the database (one
 * indexed lookup per query of the page) rather than by a second round trip.
 */
export function queryReads(db: Knex) {
  return db('queries as qu').join('records as r', 'r.id', 'qu.record_id').join('patients as p', 'p.id', 'qu.patient_id')
    .join('sites as s', 's.id', 'qu.site_id').join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id')
    .select<QueryPageRecord[]>('qu.id', 'p.subject', 's.number as site', 'v.code as visit', 'r.instance', 'f.code as form', 'qu.field_code',
      'qu.status', 'qu.origin', 'qu.message', 'qu.opened_at', 'qu.closed_at', 'qu.updated_at', 'qu.opened_by', 'qu.opened_by_type',
      'qu.closed_by', 'qu.closed_by_type', 'qu.close_reason',
      db.raw(`coalesce((select json_agg(json_build_object('id', a.id, 'text', a.text, 'authorType', a.author_type, 'author', a.author,
        'answeredAt', to_char(a.answered_at at time zone 'UTC', ${ISO_INSTANT})) order by a.id)
        from query_answers a where a.query_id = qu.id), '[]'::json) as answers`));
}

export function rowToQueryRead(r: QueryPageRecord): QueryReadRow {
  return {
    id: r.id, subject: r.subject, site: r.site, visit: r.visit, instance: r.instance, form: r.form, field: r.field_code,
    status: r.status, origin: r.origin, message: r.message, openedAt: r.opened_at, closedAt: r.closed_at, updatedAt: r.updated_at,
    openedBy: r.opened_by, openedByType: r.opened_by_type, answers: r.answers, closedBy: r.closed_by, closedByType: r.closed_by_type,
    closeReason: r.close_reason,
  };
}

export function readStore(db: Knex): ReadStore {
  return {
    async patientsPage(scope, filters, page) {
      const q = visible(db('patients as p').join('sites as s', 's.id', 'p.site_id'), scope, filters, 'p')
        .select<PatientPageRecord[]>('p.id', 'p.subject', 's.number as site', 'p.sex', 'p.enrolled_on', 'p.status', 'p.updated_at');
      if (filters.status !== undefined) q.where('p.status', filters.status);
      const rows = await keyset(q, 'p.id', page, 'p.updated_at');
      return rows.map((r) => ({ id: r.id, subject: r.subject, site: r.site, sex: r.sex, enrolledOn: r.enrolled_on, status: r.status, updatedAt: r.updated_at }));
    },
    async recordsPage(scope, filters, page) {
      const q = visible(
        db('records as r').join('patients as p', 'p.id', 'r.patient_id').join('sites as s', 's.id', 'r.site_id')
          .join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id'),
        scope, filters, 'r',
      ).select<RecordReadRow[]>('r.id', db.raw(`json_build_object('id', r.id, 'subject', p.subject, 'site', s.number, 'visit', v.code, 'form', f.code,
          'instance', r.instance, 'status', r.status, 'source', r.source, 'updated_at', to_char(r.updated_at at time zone 'UTC', ${ISO_INSTANT}),
          'values', r.values, 'not_done', r.not_done, 'tables', r.tables)::text as json`));
      formAndVisit(q, scope, filters, 'r');
      if (filters.status !== undefined) q.where('r.status', filters.status);
      return await keyset(q, 'r.id', page, 'r.updated_at');
    },
    async queriesPage(scope, filters, page) {
      const q = visible(queryReads(db), scope, filters, 'qu');
      formAndVisit(q, scope, filters, 'r');
      if (filters.status !== undefined) q.where('qu.status', filters.status);
      return (await keyset(q, 'qu.id', page, 'qu.updated_at')).map(rowToQueryRead);
    },
    async removals(scope, filters, since) {
      const q = db('removals as rm').join('patients as p', 'p.id', 'rm.patient_id').join('sites as s', 's.id', 'p.site_id')
        .where('rm.study_id', scope.studyId).whereIn('p.site_id', sitesOf(scope, filters)).where('rm.removed_at', '>=', since)
        .select<RemovalRecord[]>('p.subject', 's.number as site', 'rm.reason', 'rm.removed_at').orderBy('rm.id');
      if (filters.subject !== undefined) q.where('p.subject', filters.subject);
      return (await q).map((r) => ({ subject: r.subject, site: r.site, reason: r.reason, removedAt: r.removed_at }));
    },
    async watermark() {
      // Rows carry their writing transaction's start time (now()). A transaction still open may yet commit
      // rows stamped from its start, so the watermark never passes the oldest open transaction of this
      // database. The clock is read first and the list of open transactions after it, afresh
      // (pg_stat_clear_snapshot drops a copy cached earlier in this transaction): a writer that is not
      // listed has either committed, and the page's own query (read committed, run after this) sees
      // its rows, or started after the clock was read. Only the few microseconds between a writer
      // taking its start time and being listed remain, so the watermark is set back by a margin more.
      // The service's database role must see other sessions' `xact_start` (same role or pg_read_all_stats).
      const { rows: [{ clock }] } = await db.raw<{ rows: [{ clock: Date }] }>('select clock_timestamp() as clock, pg_stat_clear_snapshot()');
      const { rows: [{ oldest }] } = await db.raw<{ rows: [{ oldest: Date | null }] }>(`select min(xact_start) as oldest from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid() and xact_start is not null`);
      const start = oldest && oldest < clock ? oldest : clock;
      return new Date(start.getTime() - WATERMARK_MARGIN_MS);
    },
  };
}

/**
 * How many of the study's patients were removed (withdrew consent to data use): a page read before it
 * changed may hold such a patient (src/db/readAhead.ts). A count, not the newest removal's id: ids are
 * taken when a removal is inserted, not when it commits, so a withdrawal with a lower id committing after
 * one with a higher id leaves the newest id as it was. Removal rows are only ever inserted, never deleted
 * or updated, and each is committed with its patient's `data_use_withdrawn_at`, so the count grows by one
 * with every withdrawal that commits: two equal counts mean no withdrawal committed between them.
 */
export async function removalCount(db: Knex, studyId: number): Promise<number> {
  const row = await db('removals').where({ study_id: studyId }).count({ n: '*' }).first<{ n: string | number } | undefined>();
  return Number(row?.n ?? 0);
}
