import { expect } from 'chai';
import type { Knex } from 'knex';
import type { Database } from '../../src/db/knex.js';
import { readStore } from '../../src/db/readPages.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import type { PageRequest, ReadFilters, ReadScope } from '../../src/domain/stores.js';
import { createStudyWorld, demoDesign } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { resetDatabase, testDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * src/db/readPages.ts on PostgreSQL: the keyset pages, their visibility rules and the watermark,
 * and (with EXPLAIN on a study of thousands of records) that a page is read through an index in
 * id order, never by scanning and sorting the whole table, so memory stays bounded by the page.
 */

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }

/** The plan as indented lines, for failure messages. */
function outline(plan: PlanNode & Record<string, unknown>, depth = 0): string {
  const detail = ['Relation Name', 'Index Name', 'Index Cond', 'Filter', 'Plan Rows'].map((k) => plan[k]).filter((v) => v !== undefined).map(String).join(' ');
  return `${'  '.repeat(depth)}${plan['Node Type']} ${detail}\n${(plan.Plans ?? []).map((p) => outline(p as PlanNode & Record<string, unknown>, depth + 1)).join('')}`;
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/** The plan PostgreSQL chooses for the one query a store call makes. */
async function planOf(knex: Knex, call: (db: Knex) => Promise<unknown>): Promise<PlanNode> {
  const captured: { sql: string; bindings: unknown[] }[] = [];
  const listener = (q: { sql: string; bindings: unknown[] }) => captured.push(q);
  knex.on('query', listener);
  try {
    await call(knex);
  } finally {
    knex.removeListener('query', listener);
  }
  expect(captured, 'one query per page').to.have.length(1);
  // The captured text is in PostgreSQL's $n form; knex.raw binds `?` in the same order.
  const query = at(captured, 0, 'the queries run');
  const { rows: [explained] } = await knex.raw<{ rows: [{ 'QUERY PLAN': [{ Plan: PlanNode }] }] }>(
    `explain (format json) ${query.sql.replace(/\$\d+/g, '?')}`, query.bindings as Knex.RawBinding[]);
  return explained['QUERY PLAN'][0].Plan;
}

describe('read pages on PostgreSQL (src/db/readPages.ts)', () => {
  let db: Database;
  let scope: ReadScope;
  let siteIds: number[];
  let formIds: Map<string, number>;
  const PATIENTS_PER_SITE = 40;
  const INSTANCES = 60;

  before(async () => {
    db = await testDatabase();
    const knex = db.knex;
    await resetDatabase(knex);
    await createStudyWorld(knex);
    await createStudyWorld(knex, demoDesign('OTHER'));
    for (const code of ['DEMO', 'OTHER']) {
      const stores = createStores(knex);
      const study = (await stores.studies.findByCode(code))!;
      const ids = await stores.studies.designIds(study);
      for (const site of await stores.studies.sites(study)) {
        const patients = await knex('patients').insert(Array.from({ length: PATIENTS_PER_SITE }, (_, i) => ({
          study_id: study.id, site_id: site.id, subject: `${site.number}-${String(i + 1).padStart(3, '0')}`, sex: 'female', birth_year: 1970, enrolled_on: '2026-01-01',
        }))).returning('id');
        // Thousands of records at once: unscheduled vital signs, one per instance, interleaved across sites by id.
        await knex.raw(`insert into records (study_id, patient_id, site_id, visit_id, form_id, instance, status, source, values)
          select ?, p.id, ?, ?, ?, i, 'complete', 'api', jsonb_build_object('sbp', (100 + i)::text)
          from unnest(?::int[]) as p(id) cross join generate_series(1, ?) as i`,
        [study.id, site.id, ids.visits.get('unscheduled')!, ids.forms.get('vs')!, patients.map((p: { id: number }) => p.id), INSTANCES]);
        await knex.raw(`insert into queries (study_id, record_id, patient_id, site_id, field_code, origin, message, opened_by)
          select study_id, id, patient_id, site_id, 'sbp', 'range', 'Value out of range', 'test' from records where site_id = ? and instance % 10 = 0`, [site.id]);
      }
    }
    // As the owner: for the runtime role, ANALYZE only warns and skips the tables.
    await (await testOwnerDatabase()).knex.raw('analyze patients, records, queries');
    const study = (await createStores(knex).studies.findByCode('DEMO'))!;
    siteIds = (await createStores(knex).studies.sites(study)).map((s) => s.id);
    formIds = (await createStores(knex).studies.designIds(study)).forms;
    scope = { studyId: study.id, siteIds, hiddenFormIds: [formIds.get('ip_alloc')!] };
  });

  const page = (p: Partial<PageRequest> = {}): PageRequest => ({ afterId: 0, limit: 501, updatedSince: null, watermark: '2026-01-01T00:00:00.000Z', ...p });

  describe('EXPLAIN of a records page on a study of thousands of records', () => {
    before(async () => {
      const { count } = (await db.knex('records').where({ study_id: scope.studyId }).count({ count: '*' }).first())!;
      expect(Number(count)).to.equal(2 * PATIENTS_PER_SITE * INSTANCES);
    });

    const cases: [string, () => { scope: ReadScope; filters: ReadFilters; page: PageRequest }][] = [
      ['without a site filter', () => ({ scope, filters: {}, page: page() })],
      ['without a site filter, deep in the run', () => ({ scope, filters: {}, page: page({ afterId: 3000 }) })],
      ['with a site filter', () => ({ scope, filters: { siteId: siteIds[1] }, page: page() })],
      ['for a key of one site', () => ({ scope: { ...scope, siteIds: [at(siteIds, 0, 'the sites')] }, filters: {}, page: page({ afterId: 1000 }) })],
    ];
    for (const [name, args] of cases) {
      it(`walks an index in id order ${name}, with no Seq Scan or Sort of records`, async () => {
        const { scope: s, filters, page: p } = args();
        const plan = await planOf(db.knex, (knex) => readStore(knex).recordsPage(s, filters, p));
        const nodes = nodesOf(plan);
        const shown = `\n${outline(plan as PlanNode & Record<string, unknown>)}`;
        expect(nodes.filter((n) => n['Relation Name'] === 'records').map((n) => n['Node Type']), shown).to.satisfy(
          (types: string[]) => types.length === 1 && ['Index Scan', 'Index Only Scan'].includes(types[0] ?? ''));
        expect(nodes.map((n) => n['Node Type']), shown).to.not.include('Sort');
        expect(plan['Node Type'], shown).to.equal('Limit');
      });
    }

    it('reads records by form, queries and patients without a Seq Scan of records by form or of queries', async () => {
      // Small filtered sets may be sorted after an index scan (a top-N sort, bounded by the page), never read whole.
      const cases: [(knex: Knex) => Promise<unknown>, string[]][] = [
        [(knex) => readStore(knex).recordsPage(scope, { siteId: siteIds[0], formId: formIds.get('vs') }, page()), ['records']],
        [(knex) => readStore(knex).queriesPage(scope, { siteId: siteIds[0] }, page()), ['queries']],
        [(knex) => readStore(knex).queriesPage(scope, {}, page()), ['queries']],
        [(knex) => readStore(knex).patientsPage(scope, {}, page({ limit: 11 })), []],
      ];
      for (const [call, indexed] of cases) {
        const plan = await planOf(db.knex, call);
        const scanned = nodesOf(plan).filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']);
        for (const table of indexed) expect(scanned, `\n${outline(plan as PlanNode & Record<string, unknown>)}`).to.not.include(table);
        expect(plan['Node Type']).to.equal('Limit');
      }
    });
  });

  describe('keyset pages', () => {
    it('returns rows after the position, in id order, at most the limit, and only of the scope', async () => {
      const store = readStore(db.knex);
      const all = (await db.knex<{ id: number; study_id: number }>('records').where({ study_id: scope.studyId }).orderBy('id').select('id')).map((r) => r.id);
      const first = await store.recordsPage(scope, {}, page({ limit: 100 }));
      expect(first.map((r) => r.id)).to.deep.equal(all.slice(0, 100));
      const next = await store.recordsPage(scope, {}, page({ afterId: at(first, 99, 'the first page').id, limit: 100 }));
      expect(next.map((r) => r.id)).to.deep.equal(all.slice(100, 200));
      const siteTwo = await store.recordsPage({ ...scope, siteIds: [at(siteIds, 1, 'the sites')] }, {}, page({ limit: 5000 }));
      expect(siteTwo).to.have.length(PATIENTS_PER_SITE * INSTANCES);
      expect(new Set(siteTwo.map((r) => (JSON.parse(r.json) as { site: string }).site))).to.deep.equal(new Set(['02']));
    });

    it('leaves out the patients who withdrew data use and the hidden forms', async () => {
      const store = readStore(db.knex);
      const patient = present(await db.knex<{ id: number; site_id: number; study_id: number; subject: string }>('patients').where({ study_id: scope.studyId, subject: '01-001' }).first(), 'patient 01-001');
      const ipAlloc = await db.knex('records').insert({
        study_id: scope.studyId, patient_id: patient.id, site_id: patient.site_id, visit_id: (await createStores(db.knex).studies.designIds({ id: scope.studyId })).visits.get('baseline'),
        form_id: formIds.get('ip_alloc'), instance: 1, status: 'complete', source: 'api', values: { kit: 'K-1', arm: 'A' },
      }).returning<{ id: number }[]>('id');
      const subjects = async (s: ReadScope) => new Set((await store.recordsPage(s, { subject: '01-001' }, page({ limit: 5000 }))).map((r) => (JSON.parse(r.json) as { form: string }).form));
      expect(await subjects(scope)).to.deep.equal(new Set(['vs']));
      expect(await subjects({ ...scope, hiddenFormIds: [] })).to.deep.equal(new Set(['vs', 'ip_alloc']));
      await inTransaction(db.knex, async (stores) => stores.patients.markDataUseWithdrawn((await stores.patients.findBySubject(scope.studyId, '01-001'))!));
      expect(await store.recordsPage(scope, { subject: '01-001' }, page())).to.deep.equal([]);
      expect(await store.queriesPage(scope, { subject: '01-001' }, page())).to.deep.equal([]);
      expect(await store.patientsPage(scope, { subject: '01-001' }, page())).to.deep.equal([]);
      const removals = await store.removals(scope, {}, new Date(Date.now() - 3600_000).toISOString());
      expect(removals.map((r) => [r.subject, r.site, r.reason])).to.deep.equal([['01-001', '01', 'consent_withdrawn']]);
      expect(await store.removals({ ...scope, siteIds: [at(siteIds, 1, 'the sites')] }, {}, '2000-01-01T00:00:00.000Z')).to.deep.equal([]);
      await db.knex('records').where({ id: at(ipAlloc, 0, 'the record inserted').id }).delete();
    });
  });

  describe('watermark', () => {
    /** Longer than the margin by which the watermark is set back anyway, so only holding it back can pass. */
    const beyondMargin = () => new Promise((resolve) => setTimeout(resolve, 1500));

    it('is held back to the start of the oldest transaction still open, and comes close to now without one', async () => {
      const store = readStore(db.knex);
      const idle = await store.watermark();
      const { rows: [{ now }] } = await db.knex.raw<{ rows: [{ now: Date }] }>('select clock_timestamp() as now');
      expect(idle.getTime()).to.be.at.most(now.getTime());
      expect(idle.getTime()).to.be.above(now.getTime() - 60_000);

      const open = await db.knex.transaction();
      try {
        const { rows: [{ started }] } = await open.raw<{ rows: [{ started: Date }] }>('select now() as started');
        await beyondMargin();
        const held = await store.watermark();
        expect(held.getTime()).to.be.at.most(started.getTime());
      } finally {
        await open.rollback();
      }
    });

    it('sees a writer that began after an earlier look at the activity list in the same transaction', async () => {
      await db.knex.transaction(async (trx) => {
        // The activity list is cached per transaction once read; the watermark must not use that stale copy.
        await trx.raw('select count(*) from pg_stat_activity');
        const writer = await db.knex.transaction();
        try {
          const { rows: [{ started }] } = await writer.raw<{ rows: [{ started: Date }] }>('select now() as started');
          await beyondMargin();
          const held = await readStore(trx).watermark();
          expect(held.getTime()).to.be.at.most(started.getTime());
        } finally {
          await writer.rollback();
        }
      });
    });
  });
});
