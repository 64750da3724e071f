import { expect } from 'chai';
import type { Knex } from 'knex';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { submitRecords, type RecordInput } from '../../src/domain/records/submitRecords.js';
import { requireStudy } from '../../src/domain/studies/requireStudy.js';
import { inTransaction } from '../../src/db/stores.js';
import { createStudyWorld, demoDesign, giveConsent, makeBlindedKey, makeKey, operator } from '../helpers/factories.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { readRun } from '../helpers/readRun.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply, TestApp } from '../helpers/testApp.js';

/**
 * The three read calls (listPatients, listFormRecords, listQueries) through real HTTP: every filter
 * and its 400s, the rows as read, keyset paging (also over thousands of rows while writes go on),
 * the visibility rules (sites, blinded forms, withdrawn data use) and the read log.
 */

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** The page of each read call, by the member holding its rows. */
interface Pages { patients: AnswerOf<'listPatients', 200>; records: AnswerOf<'listFormRecords', 200>; queries: AnswerOf<'listQueries', 200> }
type Call = keyof Pages;
type RowOf<C extends Call> = Pages[C] extends Record<C, (infer Row)[]> ? Row : never;
type RecordRow = RowOf<'records'>;
type QueryRow = RowOf<'queries'>;
/** A row of any read call: each names its patient and site. */
type VisibleRow = RowOf<'patients'> | RecordRow | QueryRow;

/** A vital-signs date inside each visit's window for every patient below (enrolled 2026-01-02 to 01-06): any other opens a query (issue 19.7). */
const VISIT_DAY = { screening: '2025-12-15', baseline: '2026-01-05', unscheduled: '2026-01-10' };
const vitals = (sbp: string, visit: keyof typeof VISIT_DAY = 'screening') => ({ vsdate: VISIT_DAY[visit], sbp, dbp: '80', hr: '70' });

/** A client of one study: plain HTTP calls, and every page of a read call. */
function client(app: () => TestApp, study: string) {
  const base = `/api/v1/studies/${study}`;
  /** A GET of the study's `path`, its answer's body typed by the caller (a page, or a refusal's Problem). */
  const get = <Body>(path: string, key: string) => app().call<Body>('GET', `${base}${path}`, { key });
  return {
    get,
    async send(key: string, records: RecordInput[]): Promise<AnswerOf<'submitFormRecords', 200>['results']> {
      const res = await app().call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key, body: { records } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.counts.error, JSON.stringify(res.body.results)).to.equal(0);
      return res.body.results;
    },
    /** Follows `next` to the last page; every page must answer 200. */
    readAll: (<C extends Call>(call: C, key: string, query: Record<string, string> = {}) =>
      readRun(app(), `${base}/${call}`, call, key, query)) as ReadAll,
  };
}

/**
 * A run of one read call, typed by its page: readRun checks every page against the contract and
 * each page holds its rows under the call's name.
 */
type ReadAll = <C extends Call>(call: C, key: string, query?: Record<string, string>) => Promise<{ rows: RowOf<C>[]; pages: Reply<Pages[C]>[] }>;

const idsOf = (rows: readonly { id: number }[]) => rows.map((r) => r.id);
const ascending = (ids: number[]) => ids.every((id, i) => i === 0 || at(ids, i - 1) < id);

function expectInvalid(res: Reply<Problem>, errors: { pointer: string; code: string }[], code = 'invalid_parameter'): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(400);
  expect(res.body.code).to.equal(code);
  expect((res.body.errors ?? []).map((e) => ({ pointer: e.pointer, code: e.code }))).to.have.deep.members(errors);
  for (const e of res.body.errors ?? []) expect(e.message).to.be.a('string').and.not.equal('');
}

describe('read calls (listPatients, listFormRecords, listQueries)', () => {
  const { app, world } = useStudyWorld({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  let blindedKey: string;
  let siteOneKey: string;
  let writeOnlyKey: string;
  let otherStudyKey: string;
  const demo = client(() => app, 'DEMO');
  /** Record ids by `subject/visit/form/instance`. */
  const recordId: Record<string, number> = {};
  let manualQueryId: number;

  async function enrol(site: string, sex: string, enrolledOn: string): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/DEMO/patients', { key: world.key, body: { site, sex, birth_year: 1961, enrolled_on: enrolledOn } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(app.db.knex, 'DEMO', res.body.subject);
    return res.body.subject;
  }

  async function sendAndRemember(records: RecordInput[]): Promise<void> {
    const results = await demo.send(world.key, records);
    records.forEach((r, i) => { recordId[`${r.subject}/${r.visit}/${r.form}/${r.instance ?? 1}`] = present(at(results, i).record_id, `the id of record ${i}`); });
  }

  /** The same write path as the portal and the FHIR import, for the records that did not come through a key. */
  async function saveAs(source: 'portal' | 'fhir', records: RecordInput[]): Promise<void> {
    await inTransaction(app.db.knex, async (stores) => {
      const study = await requireStudy(stores.studies, 'DEMO');
      const manager = present(await stores.people.findUserByEmail(world.manager), 'the manager');
      const all = (await stores.studies.sites(study)).map((s) => s.id);
      const actor = source === 'fhir'
        ? { kind: 'user' as const, userId: manager.id, name: manager.name, via: 'fhir_save' as const, keyName: 'Test system' }
        : { kind: 'user' as const, userId: manager.id, name: manager.name, via: 'portal' as const };
      const outcomes = await submitRecords(stores, actor, { siteIds: all, unblinded: true }, study, records, { validateOnly: false, source });
      outcomes.forEach((o, i) => {
        expect(o.status, JSON.stringify(o)).to.be.oneOf(['ok', 'warn']);
        const r = at(records, i);
        recordId[`${r.subject}/${r.visit}/${r.form}/${r.instance ?? 1}`] = present(o.recordId, `the id of record ${i}`);
      });
    });
  }

  before(async () => {
    const knex = app.db.knex;
    blindedKey = await makeBlindedKey(knex, 'DEMO', 'Blinded sponsor');
    siteOneKey = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Site 01 sponsor', sites: ['01'] })).key;
    writeOnlyKey = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Lab', canRead: false })).key;
    otherStudyKey = (await createStudyWorld(knex, demoDesign('OTHER'))).key;

    expect(await enrol('01', 'female', '2026-01-02')).to.equal('01-001');
    expect(await enrol('01', 'male', '2026-01-03')).to.equal('01-002');
    expect(await enrol('01', 'female', '2026-01-04')).to.equal('01-003');
    expect(await enrol('02', 'male', '2026-01-05')).to.equal('02-001');
    expect(await enrol('02', 'female', '2026-01-06')).to.equal('02-002');

    await sendAndRemember([
      { subject: '01-001', visit: 'screening', form: 'vs', values: vitals('120'), not_done: { rr: 'ND' } },
      {
        subject: '01-001', visit: 'screening', form: 'mh',
        tables: { conditions: [{ term: 'Essential hypertension', code: '59621000', onset: '2019-05-01', ongoing: 'yes' }, { term: 'Asthma' }] },
      },
      { subject: '01-001', visit: 'baseline', form: 'vs', values: vitals('230', 'baseline') },
      { subject: '01-001', visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0001', arm: 'A' } },
      { subject: '01-002', visit: 'screening', form: 'vs', values: vitals('125') },
      { subject: '01-002', visit: 'screening', form: 'dm', values: { sex: '2' }, status: 'draft' },
      { subject: '01-003', visit: 'screening', form: 'vs', values: vitals('231') },
      { subject: '02-001', visit: 'screening', form: 'vs', values: vitals('118') },
      { subject: '02-001', visit: 'baseline', form: 'vs', values: vitals('232', 'baseline') },
      { subject: '02-002', visit: 'screening', form: 'vs', values: vitals('229') },
      { subject: '02-002', visit: 'unscheduled', form: 'vs', instance: 1, values: vitals('121', 'unscheduled') },
      { subject: '02-002', visit: 'unscheduled', form: 'vs', instance: 2, values: vitals('122', 'unscheduled') },
    ]);
    // Corrected value: its range query closes.
    await demo.send(world.key, [{ subject: '02-002', visit: 'screening', form: 'vs', values: { sbp: '140' }, update: true }]);
    await saveAs('portal', [{ subject: '01-002', visit: 'baseline', form: 'vs', values: vitals('126', 'baseline') }]);
    await saveAs('fhir', [{ subject: '02-001', visit: 'screening', form: 'lab_hem', values: { hgb: '14.1', wbc: '6.20', plt: '250', hct: '42.0' } }]);
    // A later update through a key does not change where the record came from.
    await demo.send(world.key, [{ subject: '01-002', visit: 'baseline', form: 'vs', values: { hr: '66' }, update: true }]);

    // A monitor's manual query on the unblinded team's form (manual queries are opened in the portal).
    manualQueryId = await inTransaction(knex, async (stores) => {
      const ipAlloc = present(await knex('records').where({ id: recordId['01-001/baseline/ip_alloc/1'] })
        .first<{ id: number; study_id: number; patient_id: number; site_id: number } | undefined>(), 'the kit allocation record');
      return only(await stores.queries.insert([{
        studyId: ipAlloc.study_id, recordId: ipAlloc.id, patientId: ipAlloc.patient_id, siteId: ipAlloc.site_id, fieldCode: 'kit',
        origin: 'manual', checkCode: null, message: 'Please check the kit number against the shipment log.', openedBy: 'Monitor',
      }]));
    });
    // No call of the API changes a patient's status; the site team does it in the portal.
    await knex('patients').where({ subject: '01-002' }).update({ status: 'withdrawn' });
    await knex('patients').where({ subject: '02-002' }).update({ status: 'completed' });
    // 01-003 withdraws consent to the use of their data: from now on invisible to every read call.
    await inTransaction(knex, (stores) => recordConsent(stores, operator, { study: 'DEMO', subject: '01-003', change: { withdrawn: '2026-02-01', dataUse: true } }));
  });

  /** Records as the database holds them for the patients a key may see, by id. */
  async function databaseRecords(knex: Knex): Promise<{ id: number; subject: string; form: string; updated_at: Date }[]> {
    return knex('records as r').join('patients as p', 'p.id', 'r.patient_id').join('forms as f', 'f.id', 'r.form_id')
      .join('studies as st', 'st.id', 'r.study_id').where('st.code', 'DEMO').whereNull('p.data_use_withdrawn_at')
      .select<{ id: number; subject: string; form: string; updated_at: Date }[]>('r.id', 'p.subject', 'f.code as form', 'r.updated_at').orderBy('r.id');
  }

  describe('listFormRecords', () => {
    let all: RecordRow[];
    before(async () => { all = (await demo.readAll('records', world.key)).rows; });

    it('returns every visible record once, in ascending id order, exactly as the database holds them', async () => {
      const expected = await databaseRecords(app.db.knex);
      expect(idsOf(all)).to.deep.equal(idsOf(expected));
      expect(ascending(idsOf(all))).to.equal(true);
      expect(all).to.have.length(13);
      for (const record of all) {
        expect(record).to.have.all.keys('id', 'subject', 'site', 'visit', 'form', 'instance', 'status', 'source', 'updated_at', 'values', 'not_done', 'tables');
        expect(record.updated_at).to.match(ISO_UTC);
        const stored = present(expected.find((r) => r.id === record.id), `record ${record.id} in the database`);
        expect(record.updated_at).to.equal(stored.updated_at.toISOString());
      }
    });

    it('reads a record with its values, not-done marks, instance, status and source', () => {
      const byId = (key: string) => all.find((r) => r.id === recordId[key]);
      expect(byId('01-001/screening/vs/1')).to.deep.equal({
        id: recordId['01-001/screening/vs/1'], subject: '01-001', site: '01', visit: 'screening', form: 'vs', instance: 1, status: 'complete',
        source: 'api', updated_at: present(byId('01-001/screening/vs/1'), 'the record').updated_at, values: vitals('120'), not_done: { rr: 'ND' }, tables: {},
      });
      expect(byId('01-002/screening/dm/1')).to.include({ status: 'draft', subject: '01-002', form: 'dm' });
      expect(present(byId('01-002/screening/dm/1'), 'the record').values).to.deep.equal({ sex: '2' });
      expect(byId('02-002/unscheduled/vs/2')).to.include({ instance: 2, visit: 'unscheduled', site: '02' });
      expect(present(byId('02-002/screening/vs/1'), 'the record').values).to.deep.equal({ ...vitals('229'), sbp: '140' });
      expect(byId('02-001/screening/lab_hem/1')).to.include({ source: 'fhir' });
    });

    it('sends a page spaced like every other answer (JSON.stringify\'s compact form), blanks inside values kept', async () => {
      const response = await fetch(`${app.baseUrl}/api/v1/studies/DEMO/records?limit=1000`, { headers: { authorization: `Bearer ${world.key}` } });
      const body = await response.text();
      expect(body).to.equal(JSON.stringify(JSON.parse(body)));
      expect(body).to.contain('"term":"Essential hypertension"').and.contain('{"id":');
    });

    it('reads the rows of a table field in order, a missing column left out', () => {
      const mh = present(all.find((r) => r.id === recordId['01-001/screening/mh/1']), 'the medical history');
      expect(mh.values).to.deep.equal({});
      expect(mh.tables).to.deep.equal({
        conditions: [{ term: 'Essential hypertension', code: '59621000', onset: '2019-05-01', ongoing: 'yes' }, { term: 'Asthma' }],
      });
    });

    it('keeps the source of the first save when a record is updated through a key', () => {
      const record = present(all.find((r) => r.id === recordId['01-002/baseline/vs/1']), 'the baseline vital signs');
      expect(record.values).to.deep.equal({ ...vitals('126', 'baseline'), hr: '66' });
      expect(record.source).to.equal('portal');
    });

    const filters: [string, Record<string, string>, (r: RecordRow) => boolean][] = [
      ['subject', { subject: '01-001' }, (r) => r.subject === '01-001'],
      ['site', { site: '02' }, (r) => r.site === '02'],
      ['visit', { visit: 'baseline' }, (r) => r.visit === 'baseline'],
      ['form', { form: 'vs' }, (r) => r.form === 'vs'],
      ['status', { status: 'draft' }, (r) => r.status === 'draft'],
      ['site, visit and form together', { site: '02', visit: 'unscheduled', form: 'vs' }, (r) => r.site === '02' && r.visit === 'unscheduled' && r.form === 'vs'],
    ];
    for (const [name, query, keep] of filters) {
      it(`filters by ${name}`, async () => {
        const res = await demo.get<Pages['records']>(`/records?${new URLSearchParams(query)}`, world.key);
        expect(res.status).to.equal(200);
        const expected = all.filter(keep);
        expect(expected).to.not.have.lengthOf(0);
        expect(expected.length).to.be.below(all.length);
        expect(res.body).to.deep.include({ records: expected, next: null, removed: [] });
      });
    }

    it('answers an unknown subject with an empty page', async () => {
      const res = await demo.get<Pages['records']>('/records?subject=09-999', world.key);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ records: [], next: null, removed: [] });
      expect(res.body.watermark).to.match(ISO_UTC);
    });

    it('returns with updated_since only the rows updated at or after it (inclusive, any offset)', async () => {
      const latest = all.reduce((a, b) => (a.updated_at > b.updated_at ? a : b));
      const since = await demo.get<Pages['records']>(`/records?updated_since=${latest.updated_at}`, world.key);
      expect(since.status).to.equal(200);
      expect(since.body.records).to.deep.equal(all.filter((r) => r.updated_at >= latest.updated_at));
      expect(idsOf(since.body.records)).to.include(latest.id);
      expect(since.body.records.length).to.be.below(all.length);
      const oneMsLater = new Date(Date.parse(latest.updated_at) + 1).toISOString();
      const later = await demo.get<Pages['records']>(`/records?updated_since=${oneMsLater}`, world.key);
      expect(idsOf(later.body.records)).to.not.include(latest.id);
      // The same instant written with another offset selects the same rows.
      const shifted = new Date(Date.parse(latest.updated_at) + 3 * 3600_000).toISOString().replace('Z', '+03:00');
      const withOffset = await demo.get<Pages['records']>(`/records?updated_since=${encodeURIComponent(shifted)}`, world.key);
      expect(withOffset.body.records).to.deep.equal(since.body.records);
    });

    const refusals: [string, { pointer: string; code: string }[]][] = [
      ['sbp=120', [{ pointer: '/query/sbp', code: 'unknown_parameter' }]],
      ['Subject=01-001', [{ pointer: '/query/Subject', code: 'unknown_parameter' }]],
      ['site=03', [{ pointer: '/query/site', code: 'unknown_filter_value' }]],
      ['visit=week99', [{ pointer: '/query/visit', code: 'unknown_filter_value' }]],
      ['form=ecg', [{ pointer: '/query/form', code: 'unknown_filter_value' }]],
      ['status=final', [{ pointer: '/query/status', code: 'enum' }]],
      ['site=01&site=02', [{ pointer: '/query/site', code: 'type' }]],
      ['updated_since=2026-03-01', [{ pointer: '/query/updated_since', code: 'format' }]],
      ['updated_since=2026-03-01T08:00:00', [{ pointer: '/query/updated_since', code: 'format' }]],
      ['updated_since=yesterday', [{ pointer: '/query/updated_since', code: 'format' }]],
      ['updated_since=0000-01-01T00:00:00Z', [{ pointer: '/query/updated_since', code: 'instant_out_of_range' }]],
      ['limit=0', [{ pointer: '/query/limit', code: 'minimum' }]],
      ['limit=1001', [{ pointer: '/query/limit', code: 'maximum' }]],
      ['limit=ten', [{ pointer: '/query/limit', code: 'type' }]],
      ['limit=2.5', [{ pointer: '/query/limit', code: 'type' }]],
      ['after=', [{ pointer: '/query/after', code: 'minLength' }]],
      ['limit=5000&vist=baseline&form=ecg', [{ pointer: '/query/limit', code: 'maximum' }, { pointer: '/query/vist', code: 'unknown_parameter' }]],
      ['visit=week99&form=ecg&site=03', [
        { pointer: '/query/visit', code: 'unknown_filter_value' }, { pointer: '/query/form', code: 'unknown_filter_value' },
        { pointer: '/query/site', code: 'unknown_filter_value' },
      ]],
    ];
    for (const [query, errors] of refusals) {
      it(`refuses ${query} with 400 naming the parameter`, async () => {
        expectInvalid(await demo.get<Problem>(`/records?${query}`, world.key), errors);
      });
    }

    it('names an unknown parameter in Russian with lang=ru', async () => {
      const res = await demo.get<Problem>('/records?lang=ru&vist=baseline', world.key);
      expectInvalid(res, [{ pointer: '/query/vist', code: 'unknown_parameter' }]);
      expect(at(res.body.errors ?? [], 0).message).to.equal('Неизвестный параметр "vist".');
    });
  });

  describe('paging (limit, next, after)', () => {
    it('pages through every record once with limit=2, next null on the last page', async () => {
      const { rows: all } = await demo.readAll('records', world.key);
      const { rows, pages } = await demo.readAll('records', world.key, { limit: '2' });
      expect(rows).to.deep.equal(all);
      expect(pages).to.have.length(Math.ceil(all.length / 2));
      pages.forEach((p, i) => {
        expect(p.body.records).to.have.length(i < pages.length - 1 ? 2 : all.length - 2 * i);
        if (i < pages.length - 1) expect(p.body.next).to.be.a('string');
        else expect(p.body.next).to.equal(null);
        // Every page of a run carries the watermark of its first page.
        expect(p.body.watermark).to.equal(at(pages, 0).body.watermark);
      });
    });

    it('gives next null when the last page is exactly full', async () => {
      const { rows: all } = await demo.readAll('patients', world.key);
      const res = await demo.get<Pages['patients']>(`/patients?limit=${all.length}`, world.key);
      expect(res.body.patients).to.deep.equal(all);
      expect(res.body.next).to.equal(null);
    });

    it('pages patients and queries the same way', async () => {
      for (const call of ['patients', 'queries'] as const) {
        const { rows: all } = await demo.readAll(call, world.key);
        const { rows, pages } = await demo.readAll(call, world.key, { limit: '1' });
        expect(rows).to.deep.equal(all);
        expect(pages).to.have.length(all.length);
      }
    });

    it('refuses a token sent with other filters, by another key, to another call, or made up, with 400 invalid_after', async () => {
      const first = await demo.get<Pages['records']>('/records?site=01&limit=1', world.key);
      const token = first.body.next as string;
      expect(token).to.be.a('string');
      expect((await demo.get<Pages['records']>(`/records?site=01&limit=1&after=${token}`, world.key)).status).to.equal(200);
      // Another limit is fine: the page size may change within a run.
      expect((await demo.get<Pages['records']>(`/records?site=01&limit=3&after=${token}`, world.key)).status).to.equal(200);
      const made = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');
      const decoded = JSON.parse(Buffer.from(token, 'base64url').toString()) as Record<string, unknown>;
      for (const [path, key] of [
        [`/records?site=02&limit=1&after=${token}`, world.key],
        [`/records?limit=1&after=${token}`, world.key],
        [`/records?site=01&limit=1&updated_since=2020-01-01T00:00:00Z&after=${token}`, world.key],
        [`/records?site=01&limit=1&after=${token}`, siteOneKey],
        [`/queries?site=01&limit=1&after=${token}`, world.key],
        ['/records?after=not-a-token', world.key],
        [`/records?after=${made(null)}`, world.key],
        [`/records?after=${made([1, 2])}`, world.key],
        [`/records?site=01&limit=1&after=${made({ ...decoded, a: -1 })}`, world.key],
        [`/records?site=01&limit=1&after=${made({ ...decoded, w: '2026-02-30T00:00:00.000Z' })}`, world.key],
        [`/records?site=01&limit=1&after=${made({ ...decoded, w: 'yesterday' })}`, world.key],
        [`/records?site=01&limit=1&after=${made({ ...decoded, f: 'x' })}`, world.key],
      ] as const) {
        const res = await demo.get<Problem>(path, key);
        expect(res.status, path).to.equal(400);
        expect(res.body.code, path).to.equal('invalid_after');
      }
    });
  });

  describe('listPatients', () => {
    it("returns the key's patients in enrolment order, without any private member", async () => {
      const res = await demo.get<Pages['patients']>('/patients', world.key);
      expect(res.status).to.equal(200);
      const stamps = await app.db.knex('patients').whereIn('subject', ['01-001', '01-002', '02-001', '02-002']).orderBy('id').pluck<Date[]>('updated_at');
      expect(res.body).to.deep.equal({
        patients: [
          { subject: '01-001', site: '01', sex: 'female', enrolled_on: '2026-01-02', status: 'enrolled', updated_at: at(stamps, 0).toISOString() },
          { subject: '01-002', site: '01', sex: 'male', enrolled_on: '2026-01-03', status: 'withdrawn', updated_at: at(stamps, 1).toISOString() },
          { subject: '02-001', site: '02', sex: 'male', enrolled_on: '2026-01-05', status: 'enrolled', updated_at: at(stamps, 2).toISOString() },
          { subject: '02-002', site: '02', sex: 'female', enrolled_on: '2026-01-06', status: 'completed', updated_at: at(stamps, 3).toISOString() },
        ],
        next: null,
        watermark: res.body.watermark,
        removed: [],
      });
      expect(res.body.watermark).to.match(ISO_UTC);
    });

    const filters: [string, string, string[]][] = [
      ['site', 'site=02', ['02-001', '02-002']],
      ['subject', 'subject=01-002', ['01-002']],
      ['status', 'status=completed', ['02-002']],
      ['status and site', 'status=enrolled&site=01', ['01-001']],
      ['an unknown subject (empty page)', 'subject=01-999', []],
    ];
    for (const [name, query, subjects] of filters) {
      it(`filters by ${name}`, async () => {
        const res = await demo.get<Pages['patients']>(`/patients?${query}`, world.key);
        expect(res.status).to.equal(200);
        expect(res.body.patients.map((p) => p.subject)).to.deep.equal(subjects);
      });
    }

    it('returns with updated_since only the patients updated at or after it', async () => {
      const all = (await demo.get<Pages['patients']>('/patients', world.key)).body.patients;
      const latest = all.reduce((a, b) => (a.updated_at > b.updated_at ? a : b));
      const res = await demo.get<Pages['patients']>(`/patients?updated_since=${latest.updated_at}`, world.key);
      expect(res.body.patients).to.deep.equal(all.filter((p) => p.updated_at >= latest.updated_at));
      expect(res.body.patients.length).to.be.below(all.length);
    });

    const refusals: [string, { pointer: string; code: string }[]][] = [
      ['form=vs', [{ pointer: '/query/form', code: 'unknown_parameter' }]],
      ['visit=baseline', [{ pointer: '/query/visit', code: 'unknown_parameter' }]],
      ['status=complete', [{ pointer: '/query/status', code: 'enum' }]],
      ['site=9', [{ pointer: '/query/site', code: 'unknown_filter_value' }]],
      ['updated_since=2026-13-01T00:00:00Z', [{ pointer: '/query/updated_since', code: 'format' }]],
      ['limit=-1', [{ pointer: '/query/limit', code: 'minimum' }]],
    ];
    for (const [query, errors] of refusals) {
      it(`refuses ${query} with 400 naming the parameter`, async () => {
        expectInvalid(await demo.get<Problem>(`/patients?${query}`, world.key), errors);
      });
    }
  });

  describe('listQueries', () => {
    let all: QueryRow[];
    before(async () => { all = (await demo.readAll('queries', world.key)).rows; });

    it('returns every query on what the key may see, in id order, with its field, form, visit and status', async () => {
      const stored = await app.db.knex('queries as q').join('patients as p', 'p.id', 'q.patient_id').whereNull('p.data_use_withdrawn_at')
        .select<{ id: number; opened_at: Date; closed_at: Date | null; updated_at: Date; message: string }[]>('q.id', 'q.opened_at', 'q.closed_at', 'q.updated_at', 'q.message').orderBy('q.id');
      expect(idsOf(all)).to.deep.equal(idsOf(stored));
      expect(all.map((q) => [q.subject, q.visit, q.form, q.field, q.status, q.origin])).to.deep.equal([
        ['01-001', 'baseline', 'vs', 'sbp', 'open', 'range'],
        ['02-001', 'baseline', 'vs', 'sbp', 'open', 'range'],
        ['02-002', 'screening', 'vs', 'sbp', 'closed', 'range'],
        ['01-001', 'baseline', 'ip_alloc', 'kit', 'open', 'manual'],
      ]);
      const closed = present(stored.find((q) => q.closed_at), 'a closed query');
      expect(all.find((q) => q.id === closed.id)).to.deep.equal({
        id: closed.id, subject: '02-002', site: '02', visit: 'screening', instance: 1, form: 'vs', field: 'sbp', status: 'closed', origin: 'range',
        message: closed.message, opened_at: closed.opened_at.toISOString(), closed_at: present(closed.closed_at, 'its closing time').toISOString(), updated_at: closed.updated_at.toISOString(),
        opened_by: { kind: 'system', name: 'Test system (API)' }, answers: [], closed_by: { kind: 'system', name: 'Test system (API)' },
        close_reason: 'The value that caused the query was corrected.',
      });
      const open = present(all.find((q) => q.id === manualQueryId), 'the manual query');
      expect(open).to.deep.include({
        closed_at: null, message: 'Please check the kit number against the shipment log.', site: '01', opened_by: { kind: 'person', name: 'Monitor' },
        answers: [], closed_by: null, close_reason: null,
      });
      for (const q of all) for (const stamp of [q.opened_at, q.updated_at]) expect(stamp).to.match(ISO_UTC);
    });

    const filters: [string, Record<string, string>, (q: QueryRow) => boolean][] = [
      ['site', { site: '02' }, (q) => q.site === '02'],
      ['subject', { subject: '01-001' }, (q) => q.subject === '01-001'],
      ['status', { status: 'closed' }, (q) => q.status === 'closed'],
      ['form', { form: 'ip_alloc' }, (q) => q.form === 'ip_alloc'],
      ['visit', { visit: 'screening' }, (q) => q.visit === 'screening'],
      ['status and site', { status: 'open', site: '02' }, (q) => q.status === 'open' && q.site === '02'],
    ];
    for (const [name, query, keep] of filters) {
      it(`filters by ${name}`, async () => {
        const res = await demo.get<Pages['queries']>(`/queries?${new URLSearchParams(query)}`, world.key);
        expect(res.status).to.equal(200);
        const expected = all.filter(keep);
        expect(expected).to.not.have.lengthOf(0);
        expect(expected.length).to.be.below(all.length);
        expect(res.body.queries).to.deep.equal(expected);
      });
    }

    it('returns with updated_since only the queries updated at or after it', async () => {
      const latest = all.reduce((a, b) => (a.updated_at > b.updated_at ? a : b));
      const res = await demo.get<Pages['queries']>(`/queries?updated_since=${latest.updated_at}`, world.key);
      expect(res.body.queries).to.deep.equal(all.filter((q) => q.updated_at >= latest.updated_at));
      expect(res.body.queries.length).to.be.below(all.length);
    });

    const refusals: [string, { pointer: string; code: string }[]][] = [
      ['field=sbp', [{ pointer: '/query/field', code: 'unknown_parameter' }]],
      ['status=pending', [{ pointer: '/query/status', code: 'enum' }]],
      ['form=ecg&visit=week99', [{ pointer: '/query/form', code: 'unknown_filter_value' }, { pointer: '/query/visit', code: 'unknown_filter_value' }]],
      ['site=03', [{ pointer: '/query/site', code: 'unknown_filter_value' }]],
    ];
    for (const [query, errors] of refusals) {
      it(`refuses ${query} with 400 naming the parameter`, async () => {
        expectInvalid(await demo.get<Problem>(`/queries?${query}`, world.key), errors);
      });
    }
  });

  describe('visibility', () => {
    it('hides the forms of the unblinded team, and queries on them, from a key whose maker is blinded', async () => {
      const full = { records: (await demo.readAll('records', world.key)).rows, queries: (await demo.readAll('queries', world.key)).rows };
      const blinded = { records: (await demo.readAll('records', blindedKey)).rows, queries: (await demo.readAll('queries', blindedKey)).rows };
      expect(full.records.some((r) => r.form === 'ip_alloc')).to.equal(true);
      expect(blinded.records).to.deep.equal(full.records.filter((r) => r.form !== 'ip_alloc'));
      expect(blinded.queries).to.deep.equal(full.queries.filter((q) => q.form !== 'ip_alloc'));
      expect(idsOf(blinded.queries)).to.not.include(manualQueryId);
      expect((await demo.readAll('patients', blindedKey)).rows).to.deep.equal((await demo.readAll('patients', world.key)).rows);
    });

    it('refuses a blinded key a form filter naming a form of the unblinded team, as if the form did not exist', async () => {
      for (const call of ['records', 'queries']) {
        const hidden = await demo.get<Problem>(`/${call}?form=ip_alloc`, blindedKey);
        expectInvalid(hidden, [{ pointer: '/query/form', code: 'unknown_filter_value' }]);
        const missing = await demo.get<Problem>(`/${call}?form=nope`, blindedKey);
        expect(at(missing.body.errors ?? [], 0).message).to.equal(at(hidden.body.errors ?? [], 0).message.replace('ip_alloc', 'nope'));
      }
    });

    it("shows a one-site key only its site's patients, records and queries, and refuses the other site as a filter", async () => {
      for (const call of ['patients', 'records', 'queries'] as const) {
        const full: VisibleRow[] = (await demo.readAll(call, world.key)).rows;
        const one: VisibleRow[] = (await demo.readAll(call, siteOneKey)).rows;
        expect(full.some((r) => r.site === '02'), call).to.equal(true);
        expect(one, call).to.deep.equal(full.filter((r) => r.site === '01'));
        expectInvalid(await demo.get<Problem>(`/${call}?site=02`, siteOneKey), [{ pointer: '/query/site', code: 'unknown_filter_value' }]);
        const otherSitePatient = await demo.get<Partial<Record<Call, unknown[]>>>(`/${call}?subject=02-001`, siteOneKey);
        expect(otherSitePatient.status).to.equal(200);
        expect(otherSitePatient.body[call]).to.deep.equal([]);
      }
    });

    it('never returns a patient who withdrew consent to the use of their data, in any call, whose data stays stored', async () => {
      for (const call of ['patients', 'records', 'queries'] as const) {
        for (const key of [world.key, siteOneKey, blindedKey]) {
          const rows: VisibleRow[] = (await demo.readAll(call, key)).rows;
          expect(rows.map((r) => r.subject), call).to.not.include('01-003');
          const named = await demo.get<Partial<Record<Call, unknown[]>>>(`/${call}?subject=01-003`, key);
          expect(named.status).to.equal(200);
          expect(named.body[call], call).to.deep.equal([]);
        }
      }
      const kept = await app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', '01-003').count({ n: '*' }).first();
      expect(Number(present(kept, 'the count').n)).to.equal(1);
      expect(await app.db.knex('queries as q').join('patients as p', 'p.id', 'q.patient_id').where('p.subject', '01-003').pluck('q.id')).to.have.length(1);
    });

    it('refuses a key without the read right with 403 and a key of another study with 404', async () => {
      for (const call of ['patients', 'records', 'queries']) {
        const writeOnly = await demo.get<Problem>(`/${call}`, writeOnlyKey);
        expect(writeOnly.status).to.equal(403);
        expect(writeOnly.body.code).to.equal('right_missing');
        const otherStudy = await demo.get<Problem>(`/${call}`, otherStudyKey);
        expect(otherStudy.status).to.equal(404);
        expect(otherStudy.body.code).to.equal('study_not_found');
        const noKey = await app.call<Problem>('GET', `/api/v1/studies/DEMO/${call}`);
        expect(noKey.status).to.equal(401);
      }
    });
  });

  describe('paging over thousands of records', () => {
    const bulk = client(() => app, 'BULK');
    let bulkKey: string;
    const PATIENTS = 20;
    const INSTANCES = 250;
    const unscheduled = (subject: string, instance: number, sbp = '120', update = false): RecordInput =>
      ({ subject, visit: 'unscheduled', form: 'vs', instance, values: vitals(sbp, 'unscheduled'), ...(update ? { update } : {}) });
    const stored = async () => app.db.knex('records as r').join('studies as s', 's.id', 'r.study_id').where('s.code', 'BULK').orderBy('r.id').pluck<number[]>('r.id');

    before(async () => {
      bulkKey = (await createStudyWorld(app.db.knex, demoDesign('BULK', (d) => { d.consent_required = false; }))).key;
      const subjects: string[] = [];
      for (let i = 0; i < PATIENTS; i++) {
        const res = await app.call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/BULK/patients', {
          key: bulkKey, body: { site: i % 2 ? '02' : '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-01-01' },
        });
        expect(res.status).to.equal(201);
        subjects.push(res.body.subject);
      }
      const records = subjects.flatMap((subject) => Array.from({ length: INSTANCES }, (_, i) => unscheduled(subject, i + 1)));
      // Through the records call itself, 500 at a time: the real write path.
      for (let i = 0; i < records.length; i += 500) await bulk.send(bulkKey, records.slice(i, i + 500));
      expect(await stored()).to.have.length(PATIENTS * INSTANCES);
    });

    it('returns 500 rows a page by default and 1000 at most, each record exactly once', async () => {
      const ids = await stored();
      const byDefault = await bulk.readAll('records', bulkKey);
      expect(byDefault.pages.map((p) => p.body.records.length)).to.deep.equal(Array(ids.length / 500).fill(500));
      expect(idsOf(byDefault.rows)).to.deep.equal(ids);
      const largest = await bulk.readAll('records', bulkKey, { limit: '1000' });
      expect(largest.pages).to.have.length(ids.length / 1000);
      expect(idsOf(largest.rows)).to.deep.equal(ids);
      const oneSite = await bulk.readAll('records', bulkKey, { site: '02', limit: '1000' });
      expect(oneSite.rows).to.deep.equal(byDefault.rows.filter((r) => r.site === '02'));
      expect(oneSite.rows).to.have.length(ids.length / 2);
    });

    it('never returns a record twice nor skips one that existed when the run started, while records are added and updated', async () => {
      const before = await stored();
      const subjects = (await bulk.readAll('patients', bulkKey)).rows.map((p) => p.subject);
      // Each page is read while a request adds new instances and updates existing records (which keeps their ids).
      const write = (round: number) => bulk.send(bulkKey, [
        ...Array.from({ length: 20 }, (_, i) => unscheduled(at(subjects, round % subjects.length), INSTANCES + 1 + round * 20 + i)),
        ...Array.from({ length: 20 }, (_, i) => unscheduled(at(subjects, (round + i) % subjects.length), 1 + ((round * 37 + i * 11) % INSTANCES), String(100 + round), true)),
      ]);
      const seen: number[] = [];
      let after: string | null = null;
      let round = 0;
      do {
        const [page]: [Reply<Pages['records']>, unknown] = await Promise.all([bulk.get<Pages['records']>(`/records?limit=250${after ? `&after=${after}` : ''}`, bulkKey), write(round++)]);
        expect(page.status).to.equal(200);
        seen.push(...idsOf(page.body.records));
        after = page.body.next;
      } while (after);
      expect(new Set(seen).size, 'no record twice').to.equal(seen.length);
      expect(ascending(seen)).to.equal(true);
      const returned = new Set(seen);
      expect(before.filter((id) => !returned.has(id)), 'records that existed when the run started').to.deep.equal([]);
      expect((await stored()).length, 'writes went on during the run').to.equal(before.length + round * 20);
    });
  });

  describe('read log', () => {
    it('logs each page with its filters and the rows it returned', async () => {
      const knex = app.db.knex;
      const keyId = present(await knex('api_keys').where({ name: 'Site 01 sponsor' }).first<{ id: number } | undefined>('id'), 'the key').id;
      const before = await knex('read_log').where({ api_key_id: keyId }).max({ id: 'id' }).first<{ id: number | null } | undefined>();
      const first = await demo.get<Pages['records']>('/records?visit=screening&limit=2', siteOneKey);
      await demo.get<Pages['records']>(`/records?visit=screening&limit=2&after=${first.body.next}`, siteOneKey);
      await demo.get('/queries?status=open&updated_since=2026-01-01T00:00:00Z', siteOneKey);
      await demo.get<Pages['patients']>('/patients?site=03', siteOneKey); // refused: not a read
      const logged = await knex('read_log').where({ api_key_id: keyId }).where('id', '>', before?.id ?? 0).orderBy('id')
        .select<{ operation: string; filters: unknown; rows: number; at: Date }[]>('*');
      expect(logged.map((l) => ({ operation: l.operation, filters: l.filters, rows: l.rows }))).to.deep.equal([
        { operation: 'records', filters: { visit: 'screening', limit: 2 }, rows: 2 },
        { operation: 'records', filters: { visit: 'screening', limit: 2, after: true }, rows: 2 },
        { operation: 'queries', filters: { status: 'open', updated_since: '2026-01-01T00:00:00Z', limit: 500 }, rows: 2 },
      ]);
      for (const entry of logged) expect(entry.at).to.be.an.instanceOf(Date);
    });

    it("adds up, for every key, to the key's rows-read counter", async () => {
      const keys = await app.db.knex('api_keys').select<{ id: number; name: string; rows_read: number }[]>('id', 'name', 'rows_read');
      const sums = await app.db.knex('read_log').groupBy('api_key_id').select('api_key_id').sum({ rows: 'rows' });
      const logged = new Map((sums as { api_key_id: number; rows: string | number }[]).map((s) => [s.api_key_id, Number(s.rows)]));
      expect(keys.filter((k) => k.rows_read > 0).length).to.be.at.least(3);
      for (const key of keys) expect(key.rows_read, key.name).to.equal(logged.get(key.id) ?? 0);
    });
  });
});
