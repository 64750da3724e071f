import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { KeyContext } from '../../src/domain/apiKeys/keyContext.js';
import { enrolPatient } from '../../src/domain/patients/enrolPatient.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { submitRecords, type RecordInput } from '../../src/domain/records/submitRecords.js';
import { requireStudy } from '../../src/domain/studies/requireStudy.js';
import { inTransaction, type AllStores } from '../../src/db/stores.js';
import { giveConsent, makeKey, operator } from '../helpers/factories.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply, TestApp } from '../helpers/testApp.js';
import { testEnv } from '../helpers/testDatabase.js';

/**
 * Incremental loads (spec: "Reading data", listFormRecords): a sponsor that passes each load's
 * `watermark` as the next `updated_since`, upserts by id (patients by subject) and deletes the
 * patients listed in `removed` ends with exactly the database's contents, even when slow writers
 * commit rows stamped before the previous load, and while writes go on.
 */

/** The rows of each read call. */
interface Rows {
  patients: AnswerOf<'listPatients', 200>['patients'][number];
  records: AnswerOf<'listFormRecords', 200>['records'][number];
  queries: AnswerOf<'listQueries', 200>['queries'][number];
}
type Call = keyof Rows;
type Row = Rows[Call];
type Removal = AnswerOf<'listFormRecords', 200>['removed'][number];
/** A page of any of the three read calls: the members they share, and the rows under the call's name. */
type Page = Pick<AnswerOf<'listFormRecords', 200>, 'next' | 'watermark' | 'removed'> & { [C in Call]?: Rows[C][] };
const CALLS: Call[] = ['patients', 'records', 'queries'];

/** A vital-signs date inside each visit's window for the patients below (enrolled 2026-01-02 or 01-03): any other opens a query (issue 19.7). */
const VISIT_DAY = { screening: '2025-12-15', baseline: '2026-01-04', unscheduled: '2026-01-10' };
const vitals = (sbp: string, visit: keyof typeof VISIT_DAY = 'screening') => ({ vsdate: VISIT_DAY[visit], sbp, dbp: '60', hr: '70' });
const run = promisify(execFile);

/** What a sponsor system keeps: the rows of each call by id (patients by subject), and the last watermark. */
class Replica {
  readonly rows: Record<Call, Map<string | number, Row>> = { patients: new Map(), records: new Map(), queries: new Map() };
  watermark: string | undefined;
  loads = 0;

  constructor(private readonly get: (path: string) => Promise<Reply<Page>>, private readonly limit: number) {}

  /** One incremental load: every page of the three calls since the last watermark; the first call's watermark is kept. */
  async load(): Promise<{ removed: Removal[]; rows: { [C in Call]: Rows[C][] } }> {
    const since = this.watermark;
    let next: string | undefined;
    const removed: Removal[] = [];
    const got: Record<Call, Row[]> = { patients: [], records: [], queries: [] };
    for (const call of CALLS) {
      let after: string | null = null;
      do {
        const query = new URLSearchParams({ limit: String(this.limit), ...(since ? { updated_since: since } : {}), ...(after ? { after } : {}) });
        const page = await this.get(`/${call}?${query}`);
        expect(page.status, JSON.stringify(page.body)).to.equal(200);
        if (after) expect(page.body.removed, 'removed only on the first page').to.deep.equal([]);
        else next ??= page.body.watermark;
        const rows: Row[] = present(page.body[call], `the ${call} of the page`);
        // Records and queries are kept by id, patients (who have none on the wire) by subject.
        for (const row of rows) this.rows[call].set('id' in row ? row.id : row.subject, row);
        got[call].push(...rows);
        // After the page's rows: a patient removed meanwhile may still be on this page.
        for (const gone of page.body.removed) {
          removed.push(gone);
          this.forget(gone.subject);
        }
        after = page.body.next;
      } while (after);
    }
    this.watermark = next;
    this.loads++;
    // Each call's rows went to that call's list only.
    return { removed, rows: got as { [C in Call]: Rows[C][] } };
  }

  private forget(subject: string): void {
    this.rows.patients.delete(subject);
    for (const call of ['records', 'queries'] as const) {
      for (const [id, row] of this.rows[call]) if (row.subject === subject) this.rows[call].delete(id);
    }
  }

  /** The rows kept of one call, by id (patients by subject). */
  sorted<C extends Call>(call: C): Rows[C][] {
    const rows = [...this.rows[call].values()].sort((a, b) => ('id' in a && 'id' in b ? a.id - b.id : a.subject.localeCompare(b.subject)));
    // `load` keeps each call's rows in the map of that call.
    return rows as Rows[C][];
  }
}

/** A deterministic generator, so a failing run can be repeated with its seed. */
function randomFrom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Lets a test hold a transaction open: `started` resolves once its writes are done, `commit()` lets it finish. */
function slowTransaction(app: TestApp, write: (stores: AllStores) => Promise<void>) {
  let commit!: () => void;
  const gate = new Promise<void>((resolve) => { commit = resolve; });
  let wrote!: () => void;
  const started = new Promise<void>((resolve) => { wrote = resolve; });
  const done = inTransaction(app.db.knex, async (stores) => {
    await write(stores);
    wrote();
    await gate;
  });
  // A failed write must not leave the test waiting for `started`.
  done.catch(() => wrote());
  return { started, done, commit: () => { commit(); return done; } };
}

describe('incremental loads (updated_since, watermark, removed)', () => {
  const { app, world } = useStudyWorld({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  let keyContext: KeyContext;
  const base = '/api/v1/studies/DEMO';
  const get = (path: string, key = world.key) => app.call<Page>('GET', `${base}${path}`, { key });

  async function enrol(site: string): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base}/patients`, { key: world.key, body: { site, sex: 'female', birth_year: 1970, enrolled_on: '2026-01-02' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(app.db.knex, 'DEMO', res.body.subject);
    return res.body.subject;
  }

  async function send(records: RecordInput[]): Promise<AnswerOf<'submitFormRecords', 200>['results']> {
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key: world.key, body: { records } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.counts.error, JSON.stringify(res.body.results)).to.equal(0);
    return res.body.results;
  }

  /** Saves records through the one write path, inside the caller's (slow) transaction. */
  async function write(stores: AllStores, records: RecordInput[]): Promise<void> {
    const study = await requireStudy(stores.studies, 'DEMO');
    const outcomes = await submitRecords(stores, { kind: 'api_key', keyId: world.keyId, keyName: 'Test system', makerId: keyContext.makerId },
      { siteIds: keyContext.siteIds, unblinded: true }, study, records, { validateOnly: false, source: 'api' });
    for (const o of outcomes) expect(o.status, JSON.stringify(o)).to.be.oneOf(['ok', 'warn']);
  }

  /** What the database holds for the rows a key may see (patients who withdrew data use left out). */
  async function databaseContents() {
    const knex = app.db.knex;
    const patients = await knex('patients as p').join('studies as s', 's.id', 'p.study_id').where('s.code', 'DEMO').whereNull('p.data_use_withdrawn_at')
      .orderBy('p.subject').select<{ subject: string; updated_at: Date }[]>('p.subject', 'p.updated_at');
    const records = await knex('records as r').join('patients as p', 'p.id', 'r.patient_id').join('studies as s', 's.id', 'r.study_id')
      .where('s.code', 'DEMO').whereNull('p.data_use_withdrawn_at').orderBy('r.id').select<{ id: number; values: Record<string, string>; status: string; updated_at: Date }[]>('r.id', 'r.values', 'r.status', 'r.updated_at');
    const queries = await knex('queries as q').join('patients as p', 'p.id', 'q.patient_id').join('studies as s', 's.id', 'q.study_id')
      .where('s.code', 'DEMO').whereNull('p.data_use_withdrawn_at').orderBy('q.id').select<{ id: number; status: string; updated_at: Date }[]>('q.id', 'q.status', 'q.updated_at');
    return {
      patients: patients.map((p) => ({ subject: p.subject, updated_at: p.updated_at.toISOString() })),
      records: records.map((r) => ({ id: r.id, values: r.values, status: r.status, updated_at: r.updated_at.toISOString() })),
      queries: queries.map((q) => ({ id: q.id, status: q.status, updated_at: q.updated_at.toISOString() })),
    };
  }

  before(async () => {
    const manager = present(await app.db.knex('users').where({ email: world.manager }).first<{ id: number; name: string } | undefined>(), 'the manager');
    const study = present(await app.db.knex('studies').where({ code: 'DEMO' }).first<{ id: number } | undefined>(), 'the study');
    const sites = await app.db.knex('sites').where({ study_id: study.id }).orderBy('number').pluck<number[]>('id');
    // What the key of the world would authenticate as: the slow writers act for it without HTTP.
    keyContext = {
      keyId: world.keyId, keyName: 'Test system', studyId: study.id, studyCode: 'DEMO', canRead: true, canWrite: true, canEnrol: true,
      siteIds: sites, makerId: manager.id, makerName: manager.name, makerUnblinded: true,
    };
  });

  it('brings in the next load the rows of a slow transaction that began before the previous load and committed after it', async () => {
    const subject = await enrol('01');
    await send([{ subject, visit: 'screening', form: 'vs', values: vitals('120') }]);
    const replica = new Replica((path) => get(path), 100);
    await replica.load();
    // A writer begins, enrols a patient and saves an out-of-range value (a record and a query), and stays open.
    let slowSubject = '';
    const slow = slowTransaction(app, async (stores) => {
      const study = await requireStudy(stores.studies, 'DEMO');
      slowSubject = (await enrolPatient(stores, operator, keyContext, study, { site: '02', sex: 'male', birth_year: 1966, enrolled_on: '2026-01-03' })).subject;
      await recordConsent(stores, operator, { study: 'DEMO', subject: slowSubject, change: { given: '2026-01-01' } });
      await write(stores, [{ subject: slowSubject, visit: 'screening', form: 'vs', values: vitals('240') }]);
    });
    await slow.started;
    // Longer than the margin by which the watermark is set back anyway, so only holding it back can keep the slow rows.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Meanwhile a quick writer commits, and the sponsor loads: the slow rows are not committed yet.
    await send([{ subject, visit: 'baseline', form: 'vs', values: vitals('121', 'baseline') }]);
    const during = await replica.load();
    const watermark = present(replica.watermark, 'the watermark');
    expect(during.rows.records.map((r) => r.visit)).to.include('baseline');
    for (const call of CALLS) expect(during.rows[call].map((r) => r.subject), call).to.not.include(slowSubject);
    await slow.commit();

    const slowStamp = present(await app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', slowSubject)
      .first<{ updated_at: Date } | undefined>('r.updated_at'), 'the slow record');
    // The watermark was held back to the slow transaction's start, which stamps its rows.
    expect(Date.parse(watermark)).to.be.at.most(slowStamp.updated_at.getTime());
    const next = await replica.load();
    expect(next.rows.patients.map((p) => p.subject)).to.include(slowSubject);
    expect(next.rows.records.filter((r) => r.subject === slowSubject)).to.have.length(1);
    expect(next.rows.queries.filter((q) => q.subject === slowSubject).map((q) => q.field)).to.deep.equal(['sbp']);
    const db = await databaseContents();
    expect(replica.sorted('records').map((r) => r.id)).to.deep.equal(db.records.map((r) => r.id));
    expect(replica.sorted('queries').map((q) => q.id)).to.deep.equal(db.queries.map((q) => q.id));
    expect(replica.sorted('patients').map((p) => p.subject)).to.deep.equal(db.patients.map((p) => p.subject));
  });

  it('brings in the next load a query answered and then closed since the last, with its thread', async () => {
    const subject = await enrol('01');
    await send([{ subject, visit: 'screening', form: 'vs', values: vitals('236') }]);
    const replica = new Replica((path) => get(path), 100);
    await replica.load();
    const query = present(replica.sorted('queries').find((q) => q.subject === subject && q.field === 'sbp'), 'the automatic query on sbp');
    expect(query.status).to.equal('open');
    // Another system answers it: the row's answers change, and with them its status.
    const desk = (await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Query desk' })).key;
    expect((await app.call('POST', `${base}/queries/${query.id}/answers`, { key: desk, body: { text: 'Measured twice.' } })).status).to.equal(201);
    const answered = await replica.load();
    expect(answered.rows.queries.filter((q) => q.id === query.id).map((q) => [q.status, q.answers.map((a) => a.text)])).to.deep.equal([['answered', ['Measured twice.']]]);
    expect((await app.call('POST', `${base}/queries/${query.id}/close`, { key: desk, body: { reason: 'Answer accepted.' } })).status).to.equal(200);
    const closed = await replica.load();
    expect(closed.rows.queries.filter((q) => q.id === query.id).map((q) => [q.status, q.close_reason])).to.deep.equal([['closed', 'Answer accepted.']]);
  });

  it('never serves a load begun again a page read ahead for the load before it, so a change committed in between comes in', async () => {
    const subject = await enrol('01');
    await send((['screening', 'baseline', 'unscheduled'] as const).map((visit) => ({ subject, visit, form: 'vs', values: vitals('120', visit) })));
    const page = (query: Record<string, string>) => get(`/records?${new URLSearchParams({ subject, ...query })}`);
    // A writer changes the third record and stays open while a first load reads two pages of one, and the third ahead.
    const began = Date.now();
    const slow = slowTransaction(app, (stores) => write(stores, [{ subject, visit: 'unscheduled', form: 'vs', values: vitals('125', 'unscheduled'), update: true }]));
    await slow.started;
    const first = await page({ limit: '1' });
    await page({ limit: '1', after: present(first.body.next, 'the second page') });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await slow.commit();
    // The client starts its load again (a retry) once the writer's start lies more than the watermark's margin back,
    // and within the time a page read ahead is kept, with pages of two, then of one: the page it then asks for is the
    // one read ahead for the first load, before the change committed, and the second load's watermark is after the change's stamp.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, began + 1200 - Date.now())));
    const again = await page({ limit: '2' });
    const last = await page({ limit: '1', after: present(again.body.next, 'the last page') });
    const next = await page({ updated_since: again.body.watermark });
    const unscheduled = [...(last.body.records ?? []), ...(next.body.records ?? [])].filter((r) => r.visit === 'unscheduled').map((r) => r.values.sbp);
    expect(unscheduled, 'the unscheduled systolic pressure as the second load and the one after it give it').to.include('125');
  });

  it('gives every page of a run the watermark of its first page, and a watermark no later than now', async () => {
    const before = Date.now();
    const first = await get('/records?limit=1');
    expect(first.body.next).to.be.a('string');
    const later = await get(`/records?limit=1&after=${first.body.next}`);
    expect(later.body.watermark).to.equal(first.body.watermark);
    expect(Date.parse(first.body.watermark)).to.be.at.most(Date.now());
    // With no other transaction open, the watermark is close to the moment of the load.
    expect(Date.parse(first.body.watermark)).to.be.above(before - 60_000);
  });

  it('lists a patient who withdrew consent to data use in removed, on the first page of every call, and drops them from all reads', async () => {
    const a = await enrol('01');
    const b = await enrol('02');
    await send([
      { subject: a, visit: 'screening', form: 'vs', values: vitals('230') },
      { subject: a, visit: 'baseline', form: 'vs', values: vitals('120', 'baseline') },
      { subject: b, visit: 'screening', form: 'vs', values: vitals('120') },
    ]);
    const loaded = await get('/records?limit=1');
    const watermark = loaded.body.watermark;
    const siteTwoKey = (await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Site 02 sponsor', sites: ['02'] })).key;

    // The site withdraws the patient's consent to the use of their data with the command line.
    const { stdout } = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', 'patient', 'consent', 'DEMO', a, '--withdrawn', '2026-03-01', '--data-use', '--json'],
      { env: { ...process.env, ...testEnv } });
    expect(JSON.parse(stdout) as unknown).to.deep.equal({ study: 'DEMO', subject: a, consent: 'withdrawn', data_use_withdrawn: true });
    const removedAt = present(await app.db.knex('removals as rm').join('patients as p', 'p.id', 'rm.patient_id').where('p.subject', a)
      .first<{ removed_at: Date } | undefined>('rm.removed_at'), 'the removal').removed_at;

    for (const call of CALLS) {
      const first = await get(`/${call}?updated_since=${watermark}&limit=1`);
      expect(first.status).to.equal(200);
      expect(first.body.removed, call).to.deep.equal([{ subject: a, site: '01', reason: 'consent_withdrawn', removed_at: removedAt.toISOString() }]);
      expect(Date.parse(at(first.body.removed, 0).removed_at)).to.be.at.least(Date.parse(watermark));
      if (first.body.next) {
        const second = await get(`/${call}?updated_since=${watermark}&limit=1&after=${first.body.next}`);
        expect(second.body.removed, `${call}: not on later pages`).to.deep.equal([]);
      }
      // Without updated_since there is nothing to remove from: a full load simply no longer has the patient.
      const full = await get(`/${call}`);
      expect(full.body.removed).to.deep.equal([]);
      expect(present<Row[]>(full.body[call], call).map((r) => r.subject), call).to.not.include(a);
      // Removals honour the site and subject filters and the key's sites.
      expect((await get(`/${call}?updated_since=${watermark}&site=02`)).body.removed, call).to.deep.equal([]);
      expect((await get(`/${call}?updated_since=${watermark}&subject=${b}`)).body.removed, call).to.deep.equal([]);
      expect((await get(`/${call}?updated_since=${watermark}&subject=${a}`)).body.removed.map((r) => r.subject), call).to.deep.equal([a]);
      expect((await get(`/${call}?updated_since=${watermark}`, siteTwoKey)).body.removed, call).to.deep.equal([]);
    }
  });

  it('lets a patient who already withdrew consent later withdraw the use of their data, and lists them then', async () => {
    const subject = await enrol('02');
    await send([{ subject, visit: 'screening', form: 'vs', values: vitals('120') }]);
    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: 'DEMO', subject, change: { withdrawn: '2026-03-01', dataUse: false } }));
    const loaded = await get(`/records?subject=${subject}`);
    expect(loaded.body.records).to.have.length(1);
    const result = await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: 'DEMO', subject, change: { withdrawn: '2026-04-01', dataUse: true } }));
    expect(result).to.deep.equal({ subject, consent: 'withdrawn', dataUseWithdrawn: true });
    const next = await get(`/records?updated_since=${loaded.body.watermark}&subject=${subject}`);
    expect(next.body.removed.map((r) => r.subject)).to.deep.equal([subject]);
    expect(next.body.records).to.deep.equal([]);
  });

  it('ends with exactly the database contents after chained loads while writers, slow ones included, insert, update and remove', async () => {
    const seed = Number(process.env.SDX_TEST_SEED ?? Date.now() % 1_000_000);
    const random = randomFrom(seed);
    const pick = <T>(items: T[]): T => at(items, Math.floor(random() * items.length));
    const sbp = () => String(pick([110, 125, 140, 235, 60]));
    const replica = new Replica((path) => get(path), 7);
    await replica.load();

    /** A writer owns its patients, so writers never wait for each other's locks on a patient or a record. */
    async function writer(): Promise<void> {
      const mine: { subject: string; instances: number }[] = [];
      for (let step = 0; step < 18; step++) {
        const op = mine.length === 0 ? 'enrol' : pick(['enrol', 'insert', 'insert', 'update', 'update', 'slow', 'slow', 'withdraw']);
        if (op === 'enrol' || (op === 'withdraw' && mine.length < 2)) {
          mine.push({ subject: await enrol(pick(['01', '02'])), instances: 0 });
        } else if (op === 'insert') {
          const p = pick(mine);
          p.instances++;
          await send([{ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: p.instances, values: vitals(sbp(), 'unscheduled') }]);
        } else if (op === 'update') {
          const p = pick(mine.filter((m) => m.instances > 0).concat(at(mine, 0)));
          if (p.instances === 0) continue;
          await send([{ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: 1 + Math.floor(random() * p.instances), values: { sbp: sbp() }, update: true }]);
        } else if (op === 'slow') {
          const p = pick(mine);
          const records: RecordInput[] = [{ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: ++p.instances, values: vitals(sbp(), 'unscheduled') }];
          if (p.instances > 1) records.push({ subject: p.subject, visit: 'unscheduled', form: 'vs', instance: 1, values: { sbp: sbp() }, update: true });
          const slow = slowTransaction(app, (stores) => write(stores, records));
          await slow.started;
          // Held open across at least one load of the reader, and longer than the watermark's margin.
          const loadsBefore = replica.loads;
          await new Promise((r) => setTimeout(r, 1100));
          while (replica.loads < loadsBefore + 1) await new Promise((r) => setTimeout(r, 10));
          await slow.commit();
        } else {
          const p = at(mine.splice(Math.floor(random() * mine.length), 1), 0);
          await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: 'DEMO', subject: p.subject, change: { withdrawn: '2026-03-01', dataUse: true } }));
        }
      }
    }

    let writing = true;
    const writers = Promise.all([writer(), writer(), writer()]).finally(() => { writing = false; });
    while (writing) await replica.load();
    await writers;
    // Everything has committed: one more load in the chain brings the replica up to date.
    await replica.load();

    const db = await databaseContents();
    const message = `seed ${seed} (repeat with SDX_TEST_SEED=${seed})`;
    expect(db.records.length, message).to.be.above(10);
    expect(replica.sorted('patients').map((p) => ({ subject: p.subject, updated_at: p.updated_at })), message).to.deep.equal(db.patients);
    expect(replica.sorted('records').map((r) => ({ id: r.id, values: r.values, status: r.status, updated_at: r.updated_at })), message).to.deep.equal(db.records);
    expect(replica.sorted('queries').map((q) => ({ id: q.id, status: q.status, updated_at: q.updated_at })), message).to.deep.equal(db.queries);
    // And the replica equals a full read made now, member for member.
    const fresh = new Replica((path) => get(path), 1000);
    await fresh.load();
    for (const call of CALLS) expect(replica.sorted(call), `${call}, ${message}`).to.deep.equal(fresh.sorted(call));
  });
});
