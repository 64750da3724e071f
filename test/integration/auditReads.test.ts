import { expect } from 'chai';
import type { Knex } from 'knex';
import { auditReadStore } from '../../src/db/auditReads.js';
import type { Database } from '../../src/db/knex.js';
import { createStores } from '../../src/db/stores.js';
import type { AuditReadRow } from '../../src/domain/reads/auditRows.js';
import type { PageRequest, ReadScope } from '../../src/domain/stores.js';
import { createStudyWorld, demoDesign } from '../helpers/factories.js';
import { at } from '../helpers/only.js';
import { resetDatabase, testDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * src/db/auditReads.ts on PostgreSQL, over a trail of tens of thousands of rows whose ids interleave two
 * studies: each row's chain position, the visibility rules in the SQL, and (with EXPLAIN) that a page
 * walks an index of audit_events in id order instead of sorting the study's trail.
 */

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }
const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];

const ROWS = 40_000;

describe('audit pages on PostgreSQL (src/db/auditReads.ts)', () => {
  let db: Database;
  let scope: ReadScope;
  let siteIds: number[];
  /** The DEMO study's audit ids in chain order. */
  let chain: number[];
  let withdrawnPatient: number;
  let hiddenRecords: number[];

  before(async () => {
    db = await testDatabase();
    const knex = db.knex;
    await resetDatabase(knex);
    await createStudyWorld(knex);
    await createStudyWorld(knex, demoDesign('OTHER'));
    // Filled for both codes by the loop below.
    const studies = {} as Record<'DEMO' | 'OTHER', { id: number; patients: number[]; records: number[] }>;
    for (const code of ['DEMO', 'OTHER'] as const) {
      const stores = createStores(knex);
      const study = (await stores.studies.findByCode(code))!;
      const ids = await stores.studies.designIds(study);
      const sites = await stores.studies.sites(study);
      const patients = await knex<{ id: number; site_id: number }>('patients').insert(sites.flatMap((site) => Array.from({ length: 40 }, (_, i) => ({
        study_id: study.id, site_id: site.id, subject: `${site.number}-${String(i + 1).padStart(3, '0')}`, sex: 'female', birth_year: 1970, enrolled_on: '2026-01-01',
      })))).returning<{ id: number; site_id: number }[]>(['id', 'site_id']);
      const records = await knex('records').insert(patients.flatMap((p) => ['vs', 'ip_alloc'].map((form) => ({
        study_id: study.id, patient_id: p.id, site_id: p.site_id, visit_id: ids.visits.get('baseline')!, form_id: ids.forms.get(form)!, instance: 1, status: 'complete', source: 'api', values: {},
      })))).returning<{ id: number; patient_id: number; form_id: number }[]>(['id', 'patient_id', 'form_id']);
      studies[code] = { id: study.id, patients: patients.map((p) => p.id), records: records.map((r) => r.id) };
      if (code === 'DEMO') {
        siteIds = sites.map((s) => s.id);
        scope = { studyId: study.id, siteIds, hiddenFormIds: [ids.forms.get('ip_alloc')!] };
        hiddenRecords = records.filter((r) => r.form_id === ids.forms.get('ip_alloc')).map((r) => r.id);
      }
    }
    // Rows of both studies by turns, so ids have gaps within a study; every 7th is about no patient, every 11th about no
    // record, every 13th links hospital identifiers (never shown). The records alternate between vs and ip_alloc.
    await knex.raw(`insert into audit_events (study_id, at, actor_type, actor_id, author, reason, action, patient_id, record_id, field_code, old_value, new_value, details, prev_hash, hash)
      select s.id, now(), 'api_key', 1, 'Test (API)', 'test',
        case when g % 13 = 0 then 'patient.fhir_identity_linked' when g % 7 = 0 then 'api_key.created' when g % 11 = 0 then 'consent.given' else 'record.value_set' end,
        case when g % 7 = 0 and g % 13 <> 0 then null else s.patients[1 + (g / 2) % array_length(s.patients, 1)] end,
        case when g % 7 = 0 or g % 11 = 0 or g % 13 = 0 then null else s.records[1 + (g / 2) % array_length(s.records, 1)] end,
        'sbp', null, '120', '{}'::jsonb, repeat('0', 64), repeat('1', 64)
      from generate_series(1, ?::int) g
      join (values (?::int, ?::int[], ?::bigint[]), (?::int, ?::int[], ?::bigint[])) as s(id, patients, records) on s.id = case when g % 2 = 0 then ? else ? end::int`,
    [ROWS, studies.DEMO.id, studies.DEMO.patients, studies.DEMO.records, studies.OTHER.id, studies.OTHER.patients, studies.OTHER.records, studies.DEMO.id, studies.OTHER.id]);
    withdrawnPatient = at(studies.DEMO.patients, 1, 'the DEMO patients');
    await knex('patients').where({ id: withdrawnPatient }).update({ data_use_withdrawn_at: knex.fn.now() });
    // Only the tables' owner may analyze them; the runtime role would be skipped with a warning.
    await (await testOwnerDatabase()).knex.raw('analyze patients, records, audit_events');
    chain = (await knex<{ id: number; study_id: number }>('audit_events').where({ study_id: scope.studyId }).orderBy('id').select('id')).map((r) => r.id);
  });

  const page = (p: Partial<PageRequest> = {}): PageRequest => ({ afterId: 0, limit: 501, updatedSince: null, watermark: '2026-01-01T00:00:00.000Z', ...p });

  async function readAll(s: ReadScope, limit: number): Promise<AuditReadRow[]> {
    const store = auditReadStore(db.knex);
    const rows: AuditReadRow[] = [];
    for (let afterId = 0; ;) {
      const found = await store.auditPage(s, {}, page({ afterId, limit }));
      rows.push(...found);
      if (found.length < limit) return rows;
      afterId = at(found, found.length - 1, 'the page').id;
    }
  }

  it('gives every row its place in its own study\'s chain, counting the rows the key does not see, on every page', async () => {
    // The study's own rows too: its key's creation and its manager's role.
    expect(chain.length).to.equal(ROWS / 2 + 2);
    const positions = new Map(chain.map((id, i) => [id, i + 1]));
    for (const s of [scope, { ...scope, siteIds: [at(siteIds, 1, 'the sites')] }]) {
      const rows = await readAll(s, 97);
      expect(rows.length).to.be.above(500);
      for (const row of rows) expect(row.position, `row ${row.id}`).to.equal(positions.get(row.id));
    }
  });

  it('leaves out rows about no patient, the identity links, a withdrawn patient and hidden forms, and keeps rows about no record', async () => {
    const rows = await readAll(scope, 1000);
    const stored = await db.knex<{ id: number; action: string; patient_id: number | null; record_id: number | null }>('audit_events')
      .whereIn('id', rows.map((r) => r.id)).select('id', 'action', 'patient_id', 'record_id');
    expect(stored.some((r) => r.patient_id === null || r.action === 'patient.fhir_identity_linked' || r.patient_id === withdrawnPatient)).to.equal(false);
    expect(stored.some((r) => r.record_id !== null && hiddenRecords.includes(r.record_id))).to.equal(false);
    expect(stored.filter((r) => r.record_id === null).length, 'consent rows').to.be.above(0);
    const unblinded = await readAll({ ...scope, hiddenFormIds: [] }, 1000);
    expect(unblinded.length - rows.length, 'rows about the hidden form').to.be.above(0);
    expect(unblinded.filter((r) => r.form === 'ip_alloc')).to.have.length(unblinded.length - rows.length);
  });

  it('reads a page through an index of audit_events in id order, never sorting the trail', async () => {
    for (const s of [scope, { ...scope, siteIds: [at(siteIds, 0, 'the sites')] }]) {
      const captured: { sql: string; bindings: unknown[] }[] = [];
      const listener = (q: { sql: string; bindings: unknown[] }) => captured.push(q);
      db.knex.on('query', listener);
      try {
        await auditReadStore(db.knex).auditPage(s, {}, page({ afterId: at(chain, 100, 'the chain') }));
      } finally {
        db.knex.removeListener('query', listener);
      }
      // The first query is the page; the second numbers its rows.
      const pageQuery = at(captured, 0, 'the queries run');
      const { rows: [explained] } = await db.knex.raw<{ rows: [{ 'QUERY PLAN': [{ Plan: PlanNode }] }] }>(
        `explain (format json) ${pageQuery.sql.replace(/\$\d+/g, '?')}`, pageQuery.bindings as Knex.RawBinding[]);
      const plan = explained['QUERY PLAN'][0].Plan;
      const nodes = nodesOf(plan);
      const shown = JSON.stringify(plan);
      expect(nodes.filter((n) => n['Relation Name'] === 'audit_events').map((n) => n['Node Type']), shown).to.satisfy(
        (types: string[]) => types.length === 1 && ['Index Scan', 'Index Only Scan'].includes(types[0] ?? ''));
      expect(nodes.map((n) => n['Node Type']), shown).to.not.include('Sort');
      expect(plan['Node Type'], shown).to.equal('Limit');
    }
  });
});
