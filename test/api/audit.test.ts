import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { confirmImport } from '../../src/domain/fhir/importDecision.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { createStudyWorld, demoDesign, giveConsent, makeBlindedKey, makeKey, operator } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { readRun } from '../helpers/readRun.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply } from '../helpers/testApp.js';

/**
 * listAuditTrail (issue 22.3) through real HTTP: the trail read page by page and every row's chain hash
 * recomputed by the README's own Python check, which rows each key sees (sites, blinding, withdrawn
 * data use, nothing private, nothing about no patient), the filters, paging, refusals and the read log.
 */

type Trail = AnswerOf<'listAuditTrail', 200>;
type Row = Trail['audit'][number];
/** An audit row as the database holds it, with its patient's subject. */
interface StoredRow { id: number; patient_id: number | null; subject: string | null; action: string; prev_hash: string; hash: string; at: Date }

const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json', 'utf8');
/** Text that JSON writers escape differently if they differ at all: Cyrillic, an emoji (a surrogate pair in JavaScript), quotes, a backslash, a tab, U+2028. */
const AWKWARD = 'Гипертензия "II" \\ 😀\tстадия\u2028</script>';
/** Buster Hoeger's hospital identifiers: linked to the patient by the confirmation, never shown to a key. */
const BUSTER_IDENTIFIERS = ['ad2e3fc5-2b5d-4cb9-8d03-9ea0f4ac8423', '999-59-2277', 'S99935998', 'X66226025X'];

/** The Python check of the README's "Verifying the audit trail", taken from the README itself so the two cannot drift apart. */
function readmeVerifier(): string {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Verifying the audit trail'));
  const block = /```python\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README: no Python check under "Verifying the audit trail"');
  return present(block[1], 'the README\'s Python check');
}

/** Runs the README's check on the rows as received: the ids whose hash or link does not hold. */
function verifyInPython(rows: readonly object[]): { rows: number; wrong: number[]; unlinked: number[] } {
  const run = spawnSync('python3', ['-c', readmeVerifier()], { input: JSON.stringify(rows), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { rows: number; wrong: number[]; unlinked: number[] };
}

describe('listAuditTrail', () => {
  const { app, world } = useStudyWorld({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  /** Keys besides the world's own (every right, every site): a blinded maker's, site 01's, one without the read right, another study's. */
  const keys = { blinded: '', siteOne: '', writeOnly: '', otherStudy: '' };
  let siteOneKeyId: number;
  /** Before the last transaction of the setup: the time of the data-use withdrawal's load. */
  let beforeWithdrawal: string;

  /** listAuditTrail; a refusal's body is read as `Reply<Problem>` by naming it. */
  const get = <T = Trail>(path: string, key: string) => app.call<T>('GET', `/api/v1/studies/DEMO/audit${path}`, { key });

  /** Every page of a run of listAuditTrail, each checked against the contract by the test app. */
  const readAll = async (key: string, query: Record<string, string> = {}): Promise<{ rows: Row[]; pages: Reply<Trail>[] }> => {
    const run = await readRun(app, '/api/v1/studies/DEMO/audit', 'audit', key, query);
    return { rows: run.rows, pages: run.pages };
  };

  async function send(records: Record<string, unknown>[]): Promise<void> {
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', '/api/v1/studies/DEMO/records', { key: world.key, body: { records } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.counts.error, JSON.stringify(res.body.results)).to.equal(0);
  }

  async function enrol(site: string, sex: string, birthYear: number, enrolledOn: string): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/DEMO/patients', { key: world.key, body: { site, sex, birth_year: birthYear, enrolled_on: enrolledOn } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(app.db.knex, 'DEMO', res.body.subject, '2016-01-01');
    return res.body.subject;
  }

  /** The study's audit rows as the database holds them, in chain order. */
  async function storedTrail(): Promise<StoredRow[]> {
    return app.db.knex<StoredRow>('audit_events as a').join('studies as st', 'st.id', 'a.study_id').where('st.code', 'DEMO')
      .leftJoin('patients as p', 'p.id', 'a.patient_id').select('a.*', 'p.subject').orderBy('a.id');
  }

  before(async () => {
    const knex = app.db.knex;
    keys.blinded = await makeBlindedKey(knex, 'DEMO', 'Blinded sponsor');
    const siteOne = await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Site 01 sponsor', sites: ['01'] });
    [keys.siteOne, siteOneKeyId] = [siteOne.key, siteOne.id];
    keys.writeOnly = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Lab', canRead: false })).key;
    keys.otherStudy = (await createStudyWorld(knex, demoDesign('OTHER'))).key;

    expect(await enrol('01', 'female', 1961, '2026-01-02')).to.equal('01-001');
    // Buster Hoeger (male, born 1988), whose FHIR record comes in for review.
    expect(await enrol('01', 'male', 1988, '2016-12-28')).to.equal('01-002');
    expect(await enrol('02', 'male', 1970, '2026-01-05')).to.equal('02-001');
    expect(await enrol('01', 'female', 1955, '2026-01-06')).to.equal('01-003');

    await send([
      { subject: '01-001', visit: 'screening', form: 'vs', values: { vsdate: '2025-12-15', sbp: '120', dbp: '80', hr: '70' }, not_done: { rr: 'ND' } },
      { subject: '01-001', visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0001', arm: 'A' } },
      { subject: '01-001', visit: 'screening', form: 'mh', tables: { conditions: [{ term: AWKWARD, ongoing: 'yes' }] } },
      // Out of range: a query opens, and closes when the value is corrected below.
      { subject: '02-001', visit: 'screening', form: 'vs', values: { vsdate: '2025-12-16', sbp: '230', dbp: '85', hr: '72' } },
      { subject: '01-003', visit: 'screening', form: 'vs', values: { vsdate: '2025-12-17', sbp: '131', dbp: '81', hr: '71' } },
    ]);
    await send([
      { subject: '01-001', visit: 'screening', form: 'vs', values: { sbp: '128', hr: '74' }, update: true },
      { subject: '02-001', visit: 'screening', form: 'vs', values: { sbp: '140' }, update: true },
    ]);

    const fhir = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', '/api/v1/studies/DEMO/fhir?subject=01-002', { key: world.key, raw: BUSTER, contentType: 'application/fhir+json' });
    expect(fhir.status, JSON.stringify(fhir.body)).to.equal(201);
    const manager = present(await createStores(knex).people.findUserByEmail(world.manager), 'the manager');
    await inTransaction(knex, (s) => confirmImport(s, manager, { study: 'DEMO', subject: '01-002', number: fhir.body.number }));
    // A study setting changed: a row about no patient, in the middle of the chain.
    await inTransaction(knex, (s) => changeStudySettings(s, operator, 'DEMO', { enrolmentOpen: false }));

    beforeWithdrawal = at((await knex.raw<{ rows: { now: Date }[] }>('select now() as now')).rows, 0).now.toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    // 01-003 withdraws consent to the use of their data: from now on invisible, rows and all.
    await inTransaction(knex, (stores) => recordConsent(stores, operator, { study: 'DEMO', subject: '01-003', change: { withdrawn: '2026-02-01', dataUse: true } }));
  });

  describe('the trail and its chain', () => {
    let rows: Row[];
    let stored: StoredRow[];
    before(async () => {
      rows = (await readAll(world.key, { limit: '3' })).rows;
      stored = await storedTrail();
    });

    it('returns, page by page in id order, every row about a patient the key may see, with its place in the whole chain', () => {
      const shown = stored.filter((r) => r.patient_id !== null && r.subject !== '01-003' && r.action !== 'patient.fhir_identity_linked');
      expect(rows.map((r) => r.id)).to.deep.equal(shown.map((r) => r.id));
      for (const row of rows) {
        const index = stored.findIndex((r) => r.id === row.id);
        expect(row.position, `row ${row.id}`).to.equal(index + 1);
        const same = at(stored, index, 'the stored trail');
        expect(row.previous_hash).to.equal(same.prev_hash);
        expect(row.hash).to.equal(same.hash);
        expect(row.at).to.equal(new Date(same.at).toISOString());
      }
      expect(new Set(rows.map((r) => r.action))).to.have.all.keys('patient.enrolled', 'consent.given', 'record.value_set', 'record.value_changed',
        'query.opened', 'query.closed', 'fhir.import_proposed', 'fhir.import_confirmed');
    });

    it('recomputes every row\'s hash with the README\'s Python check, standard library only, and links rows that follow each other', () => {
      const result = verifyInPython(rows);
      expect(result).to.deep.equal({ rows: rows.length, wrong: [], unlinked: [] });
      const linked = rows.filter((r, i) => i > 0 && r.position === at(rows, i - 1).position + 1);
      expect(linked.length, 'consecutive rows to link').to.be.above(5);
    });

    it('the same check finds a changed value, a changed reason and a row taken out between two linked ones', () => {
      const changed = present(rows.find((r) => r.action === 'record.value_changed'), 'a value change');
      const linked = rows.findIndex((r, i) => i > 1 && r.position === at(rows, i - 1).position + 1 && at(rows, i - 1).position === at(rows, i - 2).position + 1);
      const [first, beforeLinked] = [at(rows, 0), at(rows, linked - 1)];
      const tampered = rows.map((r) => (r.id === changed.id ? { ...r, new_value: '999' } : r.id === first.id ? { ...r, reason: 'edited' } : r));
      tampered.splice(linked - 1, 1, { ...beforeLinked, position: beforeLinked.position, hash: 'f'.repeat(64) });
      const result = verifyInPython(tampered);
      expect(result.wrong).to.include.members([changed.id, first.id, beforeLinked.id]);
      expect(result.unlinked).to.include(at(rows, linked).id);
    });

    it('shows a value change with where, old and new value, author, reason and the members its hash covers', () => {
      const sbp = present(rows.find((r) => r.action === 'record.value_changed' && r.subject === '01-001' && r.field === 'sbp'), 'the sbp change');
      expect(sbp).to.deep.include({
        subject: '01-001', site: '01', visit: 'screening', form: 'vs', instance: 1, old_value: '120', new_value: '128',
        author: 'Test system (API)', actor_type: 'api_key', actor_id: world.keyId, details: {},
      });
      expect(sbp.reason).to.be.a('string').and.have.length.above(0);
      expect(sbp.record_id).to.be.a('number');
      const consent = present(rows.find((r) => r.action === 'consent.given' && r.subject === '01-001'), 'the consent');
      expect(consent).to.deep.include({ visit: null, form: null, instance: null, field: null, record_id: null, actor_type: 'operator', actor_id: null });
      const table = present(rows.find((r) => r.form === 'mh' && r.field === 'conditions'), 'the conditions table');
      expect(at(JSON.parse(String(table.new_value)) as { term: string }[], 0).term).to.equal(AWKWARD);
      const confirmed = present(rows.find((r) => r.action === 'fhir.import_confirmed'), 'the confirmation');
      expect(confirmed).to.deep.include({ subject: '01-002', actor_type: 'user' });
      expect(confirmed.details.counts).to.be.an('object');
    });

    it('never shows the hospital identifiers a confirmation linked, nor rows about keys, people or settings', () => {
      expect(stored.map((r) => r.action)).to.include.members(['patient.fhir_identity_linked', 'api_key.created', 'role.granted', 'study.settings_changed']);
      const body = JSON.stringify(rows);
      for (const identifier of BUSTER_IDENTIFIERS) expect(body).to.not.contain(identifier);
      // Hashes left out: a run of hex digits may spell 1988 by chance.
      const unhashed = JSON.stringify(rows.map((r) => Object.fromEntries(Object.entries(r).filter(([member]) => !['hash', 'previous_hash'].includes(member)))));
      expect(unhashed).to.not.contain('birth_year').and.not.contain('1988');
      expect(rows.every((r) => r.subject)).to.equal(true);
    });
  });

  describe('what a key sees', () => {
    it('shows a one-site key only its site\'s rows, each still verifiable, with gaps in position where the others were', async () => {
      const { rows } = await readAll(keys.siteOne);
      expect(new Set(rows.map((r) => r.site))).to.have.all.keys('01');
      expect(rows.map((r) => r.subject)).to.include.members(['01-001', '01-002']).and.not.include('02-001');
      expect(verifyInPython(rows)).to.deep.equal({ rows: rows.length, wrong: [], unlinked: [] });
      expect(rows.some((r, i) => i > 0 && r.position > at(rows, i - 1).position + 1)).to.equal(true);
      const refused = await get<Problem>('?site=02', keys.siteOne);
      expect(refused.status).to.equal(400);
      expect(refused.body.errors?.map((e) => e.pointer)).to.deep.equal(['/query/site']);
    });

    it('hides the unblinded team\'s forms, their values included, from a key whose maker is blinded', async () => {
      const full = await readAll(world.key);
      const { rows } = await readAll(keys.blinded);
      const allocation = full.rows.filter((r) => r.form === 'ip_alloc');
      expect(allocation.length, 'the unblinded key sees the allocation').to.be.above(0);
      expect(rows.map((r) => r.id)).to.deep.equal(full.rows.filter((r) => r.form !== 'ip_alloc').map((r) => r.id));
      expect(JSON.stringify(rows)).to.not.contain('K-0001');
      const refused = await get<Problem>('?form=ip_alloc', keys.blinded);
      expect(refused.status).to.equal(400);
      expect(refused.body.errors?.map((e) => ({ pointer: e.pointer, code: e.code }))).to.deep.equal([{ pointer: '/query/form', code: 'unknown_filter_value' }]);
    });

    it('leaves out every row of a patient who withdrew consent to data use, and lists them in removed', async () => {
      const stored = (await storedTrail()).filter((r) => r.subject === '01-003');
      expect(stored.length).to.be.above(3);
      const { rows } = await readAll(world.key);
      expect(rows.some((r) => r.subject === '01-003')).to.equal(false);
      const since = await get(`?updated_since=${beforeWithdrawal}`, world.key);
      expect(since.body.audit).to.deep.equal([]);
      expect(since.body.removed.map((r) => r.subject)).to.deep.equal(['01-003']);
    });

    it('refuses a key without the read right (403) and a key of another study (404)', async () => {
      const writeOnly = await get<Problem>('', keys.writeOnly);
      expect(writeOnly.status).to.equal(403);
      expect(writeOnly.body.code).to.equal('right_missing');
      const other = await get<Problem>('', keys.otherStudy);
      expect(other.status).to.equal(404);
      expect(other.body.code).to.equal('study_not_found');
    });
  });

  describe('filters and paging', () => {
    let all: Row[];
    before(async () => { all = (await readAll(world.key, { limit: '1000' })).rows; });

    for (const [query, keep] of [
      ['subject=01-001', (r: Row) => r.subject === '01-001'],
      ['visit=screening', (r: Row) => r.visit === 'screening'],
      ['form=vs', (r: Row) => r.form === 'vs'],
      ['site=02&form=vs', (r: Row) => r.site === '02' && r.form === 'vs'],
      ['subject=01-001&visit=baseline&form=ip_alloc', (r: Row) => r.subject === '01-001' && r.visit === 'baseline' && r.form === 'ip_alloc'],
      ['subject=99-999', () => false],
    ] as const) {
      it(`${query} keeps exactly the matching rows`, async () => {
        const { rows } = await readAll(world.key, Object.fromEntries(new URLSearchParams(query)));
        const expected = all.filter(keep);
        if (query !== 'subject=99-999') expect(expected.length).to.be.above(0);
        expect(rows.map((r) => r.id)).to.deep.equal(expected.map((r) => r.id));
      });
    }

    it('updated_since keeps the rows written at or after it', async () => {
      const confirmed = present(all.find((r) => r.action === 'fhir.import_confirmed'), 'the confirmation');
      const { rows } = await readAll(world.key, { updated_since: confirmed.at });
      expect(rows.map((r) => r.id)).to.deep.equal(all.filter((r) => r.at >= confirmed.at).map((r) => r.id));
      expect(rows.length).to.be.below(all.length);
    });

    it('pages like the other read calls: the same rows at any limit, one watermark per run, a token bound to its filters', async () => {
      const { rows, pages } = await readAll(world.key, { limit: '2' });
      expect(rows).to.deep.equal(all);
      expect(pages.length).to.equal(Math.ceil(all.length / 2));
      expect(new Set(pages.map((p) => p.body.watermark)).size).to.equal(1);
      const token = String(at(pages, 0).body.next);
      for (const [path, key] of [[`?limit=2&subject=01-001&after=${token}`, world.key], [`?limit=2&after=${token}`, keys.siteOne], ['?after=bm90IGEgdG9rZW4', world.key]] as const) {
        const refused = await get<Problem>(path, key);
        expect(refused.status, path).to.equal(400);
        expect(refused.body.code).to.equal('invalid_after');
      }
      const unknown = await get<Problem>('?status=open', world.key);
      expect(unknown.status).to.equal(400);
      expect(unknown.body.errors?.map((e) => ({ pointer: e.pointer, code: e.code }))).to.deep.equal([{ pointer: '/query/status', code: 'unknown_parameter' }]);
    });
  });

  it('enters every page in the read log with its filters and rows', async () => {
    const knex = app.db.knex;
    const before = await knex('read_log').where({ api_key_id: siteOneKeyId }).max<{ id: number | null }>({ id: 'id' }).first();
    const first = await get('?subject=01-001&limit=2', keys.siteOne);
    await get(`?subject=01-001&limit=2&after=${String(first.body.next)}`, keys.siteOne);
    await get('?form=dm', keys.writeOnly); // refused: not a read
    const logged = await knex<{ id: number; api_key_id: number; operation: string; filters: object; rows: number }>('read_log').where({ api_key_id: siteOneKeyId }).where('id', '>', before?.id ?? 0).orderBy('id');
    expect(logged.map((l) => ({ operation: l.operation, filters: l.filters, rows: l.rows }))).to.deep.equal([
      { operation: 'audit', filters: { subject: '01-001', limit: 2 }, rows: 2 },
      { operation: 'audit', filters: { subject: '01-001', limit: 2, after: true }, rows: 2 },
    ]);
  });
});
