import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { generateKeyValue, KEY_PREFIX } from '../../src/domain/apiKeys/keyValue.js';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { grantRole, revokeRole } from '../../src/domain/people/roles.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { addPerson, createStudyWorld, demoDesign, giveConsent, makeKey, operator } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { sdx } from '../helpers/sdxCli.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { CallOptions, Reply } from '../helpers/testApp.js';

const RATE_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'];
const ENROLLED_ON = '2026-01-06';
/** Dated inside week 4's window (days 21..35 from ENROLLED_ON; screening is days −28..−14, week 12 days 77..91). */
const VITALS = { vsdate: '2026-02-03', sbp: '120', dbp: '80', hr: '70' };
const WEEK12_VITALS = { ...VITALS, vsdate: '2026-03-31' };
/** A write that always succeeds for a key that may write at site 01: the saved values again, with `update`. */
const ONE_RECORD = { records: [{ subject: '01-001', visit: 'week4', form: 'vs', values: VITALS, update: true }] };
/** A FHIR R4 record of patient 01-001 (female, born 1960) that maps to nothing: a review import of it is always accepted. */
const FHIR_PATIENT = JSON.stringify({ resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1960-05-01' });

/** Every operation of the contract, each with a request that succeeds for a key with every right on every site. */
const OPERATIONS: { id: string; method: string; path: string; options: CallOptions }[] = [
  { id: 'getOpenApi', method: 'GET', path: '/api/v1/openapi.json', options: {} },
  { id: 'getStudyDesign', method: 'GET', path: '/api/v1/studies/DEMO', options: {} },
  { id: 'createPatient', method: 'POST', path: '/api/v1/studies/DEMO/patients', options: { body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: ENROLLED_ON } } },
  { id: 'submitFormRecords', method: 'POST', path: '/api/v1/studies/DEMO/records', options: { body: ONE_RECORD } },
  { id: 'listPatients', method: 'GET', path: '/api/v1/studies/DEMO/patients', options: {} },
  { id: 'listFormRecords', method: 'GET', path: '/api/v1/studies/DEMO/records', options: {} },
  { id: 'listQueries', method: 'GET', path: '/api/v1/studies/DEMO/queries', options: {} },
  { id: 'listAuditTrail', method: 'GET', path: '/api/v1/studies/DEMO/audit', options: {} },
  { id: 'importFhirRecord', method: 'POST', path: '/api/v1/studies/DEMO/fhir?subject=01-001', options: { raw: FHIR_PATIENT, contentType: 'application/fhir+json' } },
  { id: 'importFhirNdjson', method: 'POST', path: '/api/v1/studies/DEMO/fhir-ndjson?subject=01-001', options: { raw: FHIR_PATIENT, contentType: 'application/fhir+ndjson' } },
  { id: 'listFhirImports', method: 'GET', path: '/api/v1/studies/DEMO/fhir', options: {} },
  // Patient 01-001's first import, made by the `before` hook.
  { id: 'getFhirImport', method: 'GET', path: '/api/v1/studies/DEMO/fhir/DEMO-01-001-1', options: {} },
  { id: 'listDatasets', method: 'GET', path: '/api/v1/studies/DEMO/datasets', options: {} },
  { id: 'getDataset', method: 'GET', path: '/api/v1/studies/DEMO/datasets/VS', options: {} },
  { id: 'exportOdm', method: 'GET', path: '/api/v1/studies/DEMO/odm', options: {} },
];

/** The operations that need the read right. */
const READS = ['listPatients', 'listFormRecords', 'listQueries', 'listAuditTrail', 'listFhirImports', 'getFhirImport', 'listDatasets', 'getDataset', 'exportOdm'];

const SUCCESS: Record<string, string> = {
  getOpenApi: '200', getStudyDesign: '200', createPatient: '201', submitFormRecords: '200 ok',
  listPatients: '200', listFormRecords: '200', listQueries: '200', listAuditTrail: '200', importFhirRecord: '201', importFhirNdjson: '201',
  listFhirImports: '200', getFhirImport: '200',
  listDatasets: '200', getDataset: '200', exportOdm: '200',
};

/** The expected answer of every operation for a kind of key: `<status> <problem code>`, or `200 ok` / `200 unknown_subject` for the records call's one result. */
function expected(outcome: (op: string) => string | undefined): Record<string, string> {
  return Object.fromEntries(OPERATIONS.map((op) => [op.id, op.id === 'getOpenApi' ? '200' : outcome(op.id) ?? present(SUCCESS[op.id], `the success of ${op.id}`)]));
}
const everyKeyed = (answer: string) => expected(() => answer);

/** Rows of data an answer carries: a page's rows, a dataset's rows, an ODM file's forms, one FHIR import (a dataset list counts none). */
function rowsIn(body: unknown): number {
  if (typeof body === 'string') return (body.match(/<\/FormData>/g) ?? []).length;
  const answer = body as { import?: string; rows?: unknown[]; patients?: unknown[]; records?: unknown[]; queries?: unknown[]; audit?: unknown[]; imports?: unknown[] };
  return answer.import !== undefined ? 1 : (answer.rows ?? answer.patients ?? answer.records ?? answer.queries ?? answer.audit ?? answer.imports ?? []).length;
}

/** The kinds of key the suite makes, each named for what it may do or why it fails. */
type KeyKind = 'full' | 'readOnly' | 'writeOnly' | 'noEnrol' | 'otherSite' | 'revoked' | 'expired' | 'makerDemoted' | 'makerLostExport'
  | 'writeMakerLostExport' | 'otherStudy' | 'apiOff' | 'unknown' | 'wrongChecksum' | 'malformed';

/** A submitFormRecords answer of 200: one result per record. */
type Submitted = AnswerOf<'submitFormRecords', 200>;

/** The audit trail's columns these tests read. */
interface AuditRow {
  id: number;
  action: string;
  author: string;
  actor_type: string;
  actor_id: number | null;
  reason: string | null;
  patient_id: number | null;
  field_code: string | null;
  new_value: string | null;
  details: Record<string, unknown> & { sites?: string[] };
}

/** What `sdx key list --json` prints for one key. */
interface ListedKey {
  id: number;
  name: string;
  state: string;
  why?: string;
  requests: number;
  rows_read: number;
  rights: string[];
  sites: string[];
  last_used_at: string | null;
  created_at: string;
}

describe('API keys: authentication, rights, sites and states', () => {
  const { app, world } = useStudyWorld();
  let keys: Record<KeyKind, { key: string; id?: number }>;
  /** Requests and rows read per key as the answers showed them, to compare with the counters the service keeps. */
  const usage = new Map<string, { requests: number; rows: number }>();

  /** A call through real HTTP that also tallies what the key's counters must show. */
  async function call<T>(method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
    const res = await app.call<T>(method, path, options);
    if (options.key && res.status !== 401 && !path.endsWith('openapi.json')) {
      const tally = usage.get(options.key) ?? { requests: 0, rows: 0 };
      tally.requests += 1;
      if (method === 'GET' && res.status === 200) tally.rows += rowsIn(res.body);
      usage.set(options.key, tally);
    }
    return res;
  }

  before(async () => {
    const { knex } = app.db;
    const other = await createStudyWorld(knex, demoDesign('OTHER'));
    const off = await createStudyWorld(knex, demoDesign('OFF'));
    await inTransaction(knex, (s) => changeStudySettings(s, operator, 'OFF', { apiEnabled: false }));

    // A patient at each site, each with a record whose systolic pressure opens a query.
    for (const site of ['01', '02']) {
      const enrolled = await call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/DEMO/patients', { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: ENROLLED_ON } });
      expect(enrolled.status).to.equal(201);
      await giveConsent(knex, 'DEMO', enrolled.body.subject);
      const saved = await call<Submitted>('POST', '/api/v1/studies/DEMO/records', {
        key: world.key, body: { records: [{ subject: enrolled.body.subject, visit: 'week4', form: 'vs', values: { ...VITALS, sbp: site === '01' ? '120' : '250' } }] },
      });
      expect(at(saved.body.results, 0).status).to.equal(site === '01' ? 'ok' : 'warn');
    }
    const screening = await call<Submitted>('POST', '/api/v1/studies/DEMO/records', {
      key: world.key, body: { records: [{ subject: '01-001', visit: 'screening', form: 'vs', values: { ...VITALS, vsdate: '2025-12-20', sbp: '240' } }] },
    });
    expect(at(screening.body.results, 0).status).to.equal('warn');
    // Patient 01-001's first FHIR import, which getFhirImport reads in the matrix.
    const imported = await call<AnswerOf<'importFhirRecord', 201>>('POST', '/api/v1/studies/DEMO/fhir?subject=01-001', { key: world.key, raw: FHIR_PATIENT, contentType: 'application/fhir+json' });
    expect([imported.status, imported.body.import]).to.deep.equal([201, 'DEMO-01-001-1']);

    const by = world.manager;
    const readOnly = await makeKey(knex, { study: 'DEMO', by, name: 'Reader', canWrite: false, canEnrol: false });
    const writeOnly = await makeKey(knex, { study: 'DEMO', by, name: 'Writer', canRead: false });
    const noEnrol = await makeKey(knex, { study: 'DEMO', by, name: 'No enrol', canEnrol: false });
    const otherSite = await makeKey(knex, { study: 'DEMO', by, name: 'Site 02 only', sites: ['02'] });
    const revoked = await makeKey(knex, { study: 'DEMO', by, name: 'Revoked' });
    await inTransaction(knex, (s) => revokeApiKey(s, { study: 'DEMO', keyId: revoked.id, by, via: 'cli' }));
    const expired = await makeKey(knex, { study: 'DEMO', by, name: 'Expired' });
    // Test set-up: the term ends in 30 days at the earliest, so the end is moved into the past here.
    await knex('api_keys').where({ id: expired.id }).update({ expires_at: knex.raw(`now() - interval '1 second'`) });
    await addPerson(knex, 'DEMO', 'demoted@sdx.test', { role: 'manager', canExport: true });
    const makerDemoted = await makeKey(knex, { study: 'DEMO', by: 'demoted@sdx.test', name: 'Demoted maker' });
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'demoted@sdx.test', role: 'manager' }));
    await addPerson(knex, 'DEMO', 'no-export@sdx.test', { role: 'manager', canExport: true });
    const makerLostExport = await makeKey(knex, { study: 'DEMO', by: 'no-export@sdx.test', name: 'Reader of no-export', canWrite: false, canEnrol: false });
    const writeMakerLostExport = await makeKey(knex, { study: 'DEMO', by: 'no-export@sdx.test', name: 'Writer of no-export', canRead: false });
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'no-export@sdx.test', export: true }));
    const last = present(world.key.at(-1), 'the key\'s last character');
    keys = {
      full: { key: world.key, id: world.keyId },
      readOnly, writeOnly, noEnrol, otherSite, revoked, expired, makerDemoted, makerLostExport, writeMakerLostExport,
      otherStudy: { key: other.key, id: other.keyId },
      apiOff: { key: off.key, id: off.keyId },
      unknown: { key: generateKeyValue() },
      wrongChecksum: { key: `${world.key.slice(0, -1)}${last === 'a' ? 'b' : 'a'}` },
      malformed: { key: 'not-an-sdx-key' },
    };
  });

  describe('the matrix: every operation with every kind of key, through real HTTP', () => {
    const MATRIX: { kind: string; key?: KeyKind; headers?: Record<string, string>; study?: string; expect: () => Record<string, string> }[] = [
      { kind: 'no key', expect: () => everyKeyed('401 key_missing') },
      { kind: 'an empty Bearer value', headers: { authorization: 'Bearer ' }, expect: () => everyKeyed('401 key_missing') },
      { kind: 'a malformed key', key: 'malformed', expect: () => everyKeyed('401 key_malformed') },
      { kind: 'another scheme than Bearer', headers: { authorization: 'Basic dXNlcjpwYXNz' }, expect: () => everyKeyed('401 key_malformed') },
      { kind: 'a key with a wrong checksum (one character mistyped)', key: 'wrongChecksum', expect: () => everyKeyed('401 key_malformed') },
      { kind: 'a well-formed key that does not exist', key: 'unknown', expect: () => everyKeyed('401 key_unknown') },
      { kind: 'a revoked key', key: 'revoked', expect: () => everyKeyed('401 key_revoked') },
      { kind: 'an expired key', key: 'expired', expect: () => everyKeyed('401 key_expired') },
      { kind: 'a key whose maker is no longer manager', key: 'makerDemoted', expect: () => everyKeyed('401 key_stopped') },
      { kind: 'a read key whose maker lost the export right', key: 'makerLostExport', expect: () => everyKeyed('401 key_stopped') },
      {
        kind: 'a write key whose maker lost the export right (it keeps working)', key: 'writeMakerLostExport',
        expect: () => expected((op) => (READS.includes(op) ? '403 right_missing' : undefined)),
      },
      { kind: 'a key with every right', key: 'full', expect: () => expected(() => undefined) },
      {
        kind: 'a read-only key', key: 'readOnly',
        expect: () => expected((op) => (['createPatient', 'submitFormRecords', 'importFhirRecord', 'importFhirNdjson'].includes(op) ? '403 right_missing' : undefined)),
      },
      { kind: 'a write-only key', key: 'writeOnly', expect: () => expected((op) => (READS.includes(op) ? '403 right_missing' : undefined)) },
      { kind: 'a key without the enrol right', key: 'noEnrol', expect: () => expected((op) => (op === 'createPatient' ? '403 right_missing' : undefined)) },
      { kind: 'a key of another study', key: 'otherStudy', expect: () => everyKeyed('404 study_not_found') },
      {
        kind: 'a key of another site (patient 01-001 is at site 01)', key: 'otherSite',
        expect: () => expected((op) => ({
          createPatient: '422 unknown_site', submitFormRecords: '200 unknown_subject', importFhirRecord: '422 unknown_subject', importFhirNdjson: '422 unknown_subject',
          getFhirImport: '404 fhir_import_not_found',
        } as Record<string, string>)[op]),
      },
      { kind: 'a key of its own study whose API is switched off', key: 'apiOff', study: 'OFF', expect: () => everyKeyed('403 api_disabled') },
    ];

    for (const row of MATRIX) {
      it(`answers ${row.kind} as described on each operation`, async () => {
        const key = row.key ? keys[row.key].key : undefined;
        const actual: Record<string, string> = {};
        for (const op of OPERATIONS) {
          // The body of whichever operation and status: only the members read here are named.
          const res = await call<{ results?: Submitted['results']; code?: string; status?: number } | string>(op.method, op.path.replace('/DEMO', `/${row.study ?? 'DEMO'}`), { ...op.options, key, headers: row.headers });
          const body = typeof res.body === 'string' ? {} : res.body;
          const what = op.id === 'submitFormRecords' && res.status === 200
            ? (at(body.results ?? [], 0).status === 'ok' ? 'ok' : at(body.results ?? [], 0).code)
            : body.code;
          actual[op.id] = what ? `${res.status} ${what}` : String(res.status);
          if (op.id === 'getOpenApi') continue;
          if (res.status === 401) {
            expect(res.headers.get('www-authenticate'), `${op.id}: WWW-Authenticate`).to.match(/^Bearer\b/);
            // A refused key has nothing to count against (spec, "Rate limit").
            for (const name of RATE_HEADERS) expect(res.headers.get(name), `${op.id}: no ${name} on 401`).to.equal(null);
          } else {
            expect(res.headers.get('ratelimit-limit'), `${op.id} ${res.status}: RateLimit-Limit`).to.equal('600');
            expect(Number(res.headers.get('ratelimit-remaining')), `${op.id}: RateLimit-Remaining`).to.be.within(0, 599);
            expect(Number(res.headers.get('ratelimit-reset')), `${op.id}: RateLimit-Reset`).to.be.within(1, 60);
          }
          if (res.status >= 400) {
            expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
            expect(body.status).to.equal(res.status);
          }
        }
        expect(actual).to.deep.equal(row.expect());
      });
    }
  });

  describe('studies and sites a key may not see', () => {
    it('answers another study exactly like a study that does not exist (404, same body but the request id)', async () => {
      const strip = (r: Reply<Problem>) => ({ status: r.status, body: { ...r.body, request_id: undefined } });
      const otherStudy = await call<Problem>('GET', '/api/v1/studies/OTHER/records', { key: keys.full.key });
      const noSuchStudy = await call<Problem>('GET', '/api/v1/studies/NOSUCH/records', { key: keys.full.key });
      expect(otherStudy.status).to.equal(404);
      expect(strip(otherStudy)).to.deep.equal(strip(noSuchStudy));
      expect(otherStudy.body.code).to.equal('study_not_found');
      expect(otherStudy.body.detail).not.to.contain('OTHER');
      // Even a study whose API is switched off is not revealed to a key of another study.
      expect(strip(await call<Problem>('POST', '/api/v1/studies/OFF/patients', { key: keys.full.key, body: {} }))).to.deep.equal(
        strip(await call<Problem>('POST', '/api/v1/studies/NOSUCH/patients', { key: keys.full.key, body: {} })),
      );
    });

    it('refuses a write for a patient of another site per record as unknown_subject, exactly like a patient that does not exist', async () => {
      const res = await call<Submitted>('POST', '/api/v1/studies/DEMO/records', {
        key: keys.otherSite.key,
        body: { records: [
          { subject: '01-001', visit: 'week12', form: 'vs', values: WEEK12_VITALS },
          { subject: '01-999', visit: 'week12', form: 'vs', values: WEEK12_VITALS },
          { subject: '02-001', visit: 'week12', form: 'vs', values: WEEK12_VITALS },
        ] },
      });
      expect(res.status).to.equal(200);
      const [otherSite, missing, own] = [at(res.body.results, 0), at(res.body.results, 1), at(res.body.results, 2)];
      expect(otherSite).to.include({ status: 'error', code: 'unknown_subject' });
      expect({ ...otherSite, index: 0, message: otherSite.message?.replace('01-001', 'X') }).to.deep.equal({ ...missing, index: 0, message: missing.message?.replace('01-999', 'X') });
      expect(own).to.include({ status: 'ok', code: 'saved' });
      expect(res.body.counts).to.deep.equal({ ok: 1, warn: 0, skip: 0, error: 2 });
      const week12 = await app.db.knex('records as r').join('visits as v', 'v.id', 'r.visit_id').where('v.code', 'week12').count<{ count: number }[]>('* as count');
      expect(Number(at(week12, 0).count)).to.equal(1);
    });

    it('hides patients, records and queries of another site from reads, and refuses that site as a filter like an unknown one', async () => {
      const patients = await call<AnswerOf<'listPatients', 200>>('GET', '/api/v1/studies/DEMO/patients', { key: keys.otherSite.key });
      expect(patients.body.patients.map((p) => p.subject)).to.deep.equal(['02-001']);
      const records = await call<AnswerOf<'listFormRecords', 200>>('GET', '/api/v1/studies/DEMO/records', { key: keys.otherSite.key });
      expect(records.body.records.length).to.be.greaterThan(0);
      expect(records.body.records.every((r) => r.site === '02')).to.equal(true);
      const queries = await call<AnswerOf<'listQueries', 200>>('GET', '/api/v1/studies/DEMO/queries', { key: keys.otherSite.key });
      expect(queries.body.queries.length).to.be.greaterThan(0);
      expect(queries.body.queries.every((q) => q.site === '02')).to.equal(true);
      // The full key does see site 01's rows, so the rows above were really left out.
      const all = await call<AnswerOf<'listQueries', 200>>('GET', '/api/v1/studies/DEMO/queries', { key: keys.full.key });
      expect(all.body.queries.some((q) => q.site === '01')).to.equal(true);

      const bySubject = await call<AnswerOf<'listFormRecords', 200>>('GET', '/api/v1/studies/DEMO/records?subject=01-001', { key: keys.otherSite.key });
      expect(bySubject.status).to.equal(200);
      expect(bySubject.body.records).to.deep.equal([]);
      const bySite = await call<Problem>('GET', '/api/v1/studies/DEMO/records?site=01', { key: keys.otherSite.key });
      const byNoSite = await call<Problem>('GET', '/api/v1/studies/DEMO/records?site=99', { key: keys.otherSite.key });
      expect(bySite.status).to.equal(400);
      expect(bySite.body.errors).to.deep.equal([{ pointer: '/query/site', code: 'unknown_filter_value', message: 'No site "01" that this API key may see.' }]);
      expect(at(byNoSite.body.errors ?? [], 0).code).to.equal('unknown_filter_value');
      const design = await call<AnswerOf<'getStudyDesign', 200>>('GET', '/api/v1/studies/DEMO', { key: keys.otherSite.key });
      expect(design.body.sites.map((s) => s.number)).to.deep.equal(['02']);
    });
  });

  describe('key states change between two requests', () => {
    it('a key revoked between two requests fails on the second with 401 key_revoked', async () => {
      const made = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Soon revoked' });
      expect((await call('GET', '/api/v1/studies/DEMO/patients', { key: made.key })).status).to.equal(200);
      await inTransaction(app.db.knex, (s) => revokeApiKey(s, { study: 'DEMO', keyId: made.id, by: world.manager, via: 'cli' }));
      const second = await call<Problem>('GET', '/api/v1/studies/DEMO/patients', { key: made.key });
      expect(second.status).to.equal(401);
      expect(second.body).to.include({ code: 'key_revoked', title: 'API key revoked', detail: 'This API key was revoked.' });
      expect(second.headers.get('www-authenticate')).to.match(/^Bearer\b/);
    });

    it('a key whose maker is demoted between two requests fails on the second with 401 key_stopped', async () => {
      await addPerson(app.db.knex, 'DEMO', 'soon-demoted@sdx.test', { role: 'manager', canExport: true });
      const made = await makeKey(app.db.knex, { study: 'DEMO', by: 'soon-demoted@sdx.test', name: 'Maker soon demoted' });
      expect((await call('POST', '/api/v1/studies/DEMO/records', { key: made.key, body: ONE_RECORD })).status).to.equal(200);
      await inTransaction(app.db.knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'soon-demoted@sdx.test' }));
      const second = await call<Problem>('POST', '/api/v1/studies/DEMO/records', { key: made.key, body: ONE_RECORD });
      expect(second.status).to.equal(401);
      expect(second.body).to.include({
        code: 'key_stopped', detail: 'This API key no longer works: the manager who made it is no longer a manager of the study.',
      });
    });

    it('a read key whose maker loses the export right fails on the next request; the same maker\'s write key keeps working', async () => {
      await addPerson(app.db.knex, 'DEMO', 'soon-no-export@sdx.test', { role: 'manager', canExport: true });
      const reader = await makeKey(app.db.knex, { study: 'DEMO', by: 'soon-no-export@sdx.test', name: 'Reader soon stopped', canWrite: false, canEnrol: false });
      const both = await makeKey(app.db.knex, { study: 'DEMO', by: 'soon-no-export@sdx.test', name: 'Reader-writer soon stopped', canEnrol: false });
      const writer = await makeKey(app.db.knex, { study: 'DEMO', by: 'soon-no-export@sdx.test', name: 'Writer kept', canRead: false, canEnrol: false });
      expect((await call('GET', '/api/v1/studies/DEMO/queries', { key: reader.key })).status).to.equal(200);
      await inTransaction(app.db.knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'soon-no-export@sdx.test', export: true }));
      const read = await call<Problem>('GET', '/api/v1/studies/DEMO/queries', { key: reader.key });
      expect(read.status).to.equal(401);
      expect(read.body).to.include({ code: 'key_stopped', detail: 'This read key no longer works: the manager who made it may no longer export data.' });
      // A key with read and write is a read key too: it stops for its writes as well.
      expect((await call<Problem>('POST', '/api/v1/studies/DEMO/records', { key: both.key, body: ONE_RECORD })).body.code).to.equal('key_stopped');
      expect((await call('POST', '/api/v1/studies/DEMO/records', { key: writer.key, body: ONE_RECORD })).status).to.equal(200);
    });

    it('a key whose term ends between two requests fails on the second with 401 key_expired', async () => {
      const made = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Soon expired', termDays: 30 });
      expect((await call('GET', '/api/v1/studies/DEMO', { key: made.key })).status).to.equal(200);
      await app.db.knex('api_keys').where({ id: made.id }).update({ expires_at: app.db.knex.raw('now()') });
      const second = await call<Problem>('GET', '/api/v1/studies/DEMO', { key: made.key, headers: { 'accept-language': 'ru' } });
      expect(second.status).to.equal(401);
      expect(second.body).to.include({ code: 'key_expired', title: 'Срок API-ключа истёк' });
    });

    it('a key reaches no further than its maker: a site taken from the maker leaves the key\'s reads', async () => {
      await addPerson(app.db.knex, 'DEMO', 'two-sites@sdx.test', { role: 'manager', canExport: true });
      const made = await makeKey(app.db.knex, { study: 'DEMO', by: 'two-sites@sdx.test', name: 'Narrowed' });
      const before = await call<AnswerOf<'listPatients', 200>>('GET', '/api/v1/studies/DEMO/patients?subject=01-001', { key: made.key });
      expect(before.body.patients.map((p) => p.subject)).to.deep.equal(['01-001']);
      await inTransaction(app.db.knex, (s) => grantRole(s, operator, { study: 'DEMO', email: 'two-sites@sdx.test', role: 'manager', canExport: true, unblinded: false, sites: ['02'] }));
      const after = await call<AnswerOf<'listPatients', 200>>('GET', '/api/v1/studies/DEMO/patients?subject=01-001', { key: made.key });
      expect(after.status).to.equal(200);
      expect(after.body.patients).to.deep.equal([]);
    });
  });

  describe('what a key leaves behind: audit trail, fingerprints, counters and the read log', () => {
    it('records the making and the revoking of a key in the audit trail, with the maker as author and no key value', async () => {
      const rows = await app.db.knex<AuditRow>('audit_events').whereIn('action', ['api_key.created', 'api_key.revoked'])
        .whereRaw(`details->>'key_id' = ?`, [String(keys.revoked.id)]).orderBy('id');
      expect(rows.map((r) => r.action)).to.deep.equal(['api_key.created', 'api_key.revoked']);
      for (const row of rows) expect(row).to.include({ author: 'Manager DEMO', actor_type: 'user', reason: 'Changed with the sdx command line' });
      expect(at(rows, 0).details).to.include({ key_id: keys.revoked.id, name: 'Revoked', read: true, write: true, enrol: true, term_days: 90 });
      expect(at(rows, 0).details.sites).to.deep.equal(['01', '02']);
      expect(at(rows, 1).details).to.deep.equal({ key_id: keys.revoked.id, name: 'Revoked' });
    });

    it('writes "<key name> (API)" as author and a reason naming the key on an enrolment and on a records call', async () => {
      const made = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Hospital LIS' });
      const enrolled = await call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/DEMO/patients', { key: made.key, body: { site: '02', sex: 'male', birth_year: 1955, enrolled_on: ENROLLED_ON, subject: '02-LIS' } });
      expect(enrolled.status).to.equal(201);
      await giveConsent(app.db.knex, 'DEMO', '02-LIS');
      const saved = await call<Submitted>('POST', '/api/v1/studies/DEMO/records', { key: made.key, body: { records: [{ subject: '02-LIS', visit: 'week4', form: 'vs', values: VITALS }] } });
      expect(at(saved.body.results, 0)).to.include({ status: 'ok', code: 'saved' });
      const patient = present(await app.db.knex<{ id: number; subject: string }>('patients').where({ subject: '02-LIS' }).first(), 'patient 02-LIS');
      const trail = await app.db.knex<AuditRow>('audit_events').where({ patient_id: patient.id, actor_type: 'api_key' }).orderBy('id');
      expect(trail.map((r) => r.action)).to.deep.equal(['patient.enrolled', ...Object.keys(VITALS).map(() => 'record.value_set')]);
      for (const row of trail) {
        expect(row).to.include({ author: 'Hospital LIS (API)', reason: 'Data sent through the API key "Hospital LIS"', actor_id: made.id });
      }
      expect(trail.filter((r) => r.action === 'record.value_set').map((r) => [r.field_code, r.new_value])).to.have.deep.members(Object.entries(VITALS));
    });

    it('keeps no key value anywhere in the database: only the SHA-256 fingerprint of each key', async () => {
      const made = Object.values(keys).filter((k) => k.id !== undefined);
      const { rows: tables } = await app.db.knex.raw<{ rows: { tablename: string }[] }>(`select tablename from pg_tables where schemaname = current_schema()`);
      for (const { key, id } of made) {
        // The whole value, and its 43 random characters without prefix and checksum.
        const secret = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + 43);
        for (const { tablename } of tables) {
          const { rows } = await app.db.knex.raw<{ rows: { n: number }[] }>(`select count(*)::int as n from "${tablename}" t where strpos(t::text, ?) > 0 or strpos(t::text, ?) > 0`, [key, secret]);
          expect(at(rows, 0).n, `${tablename} holds the value of key ${id}`).to.equal(0);
        }
        const row = present(await app.db.knex<{ id: number; fingerprint: Buffer }>('api_keys').where({ id }).first(), `key ${id}`);
        expect(Buffer.compare(row.fingerprint, createHash('sha256').update(key).digest())).to.equal(0);
      }
    });

    it('counts requests (refused ones included, 401s not) and rows read per key exactly, and `sdx key list` shows them with each key\'s state and why', async () => {
      const listed = await sdx<{ keys: ListedKey[] }>('key', 'list', 'DEMO');
      const byName = new Map(listed.keys.map((k) => [k.name, k]));
      const listedKey = (name: string) => present(byName.get(name), `key "${name}" in the list`);
      const states = Object.fromEntries(['Test system', 'Revoked', 'Expired', 'Demoted maker', 'Reader of no-export', 'Writer of no-export', 'Site 02 only']
        .map((name) => [name, `${listedKey(name).state}${listedKey(name).why ? ` ${listedKey(name).why}` : ''}`]));
      expect(states).to.deep.equal({
        'Test system': 'active', Revoked: 'revoked', Expired: 'expired', 'Demoted maker': 'stopped maker_not_manager',
        'Reader of no-export': 'stopped maker_lost_export', 'Writer of no-export': 'active', 'Site 02 only': 'active',
      });
      for (const name of ['Test system', 'Reader', 'Writer', 'No enrol', 'Site 02 only', 'Revoked', 'Writer of no-export']) {
        const key = present(Object.values(keys).find((k) => k.id === listedKey(name).id), `the suite's key "${name}"`).key;
        const tally = usage.get(key) ?? { requests: 0, rows: 0 };
        expect({ requests: listedKey(name).requests, rows_read: listedKey(name).rows_read }, name).to.deep.equal({ requests: tally.requests, rows_read: tally.rows });
      }
      expect(listedKey('Revoked')).to.include({ requests: 0, last_used_at: null });
      expect(listedKey('Reader').rights).to.deep.equal(['read']);
      expect(listedKey('Site 02 only').sites).to.deep.equal(['02']);
      expect(Date.parse(String(listedKey('Test system').last_used_at))).to.be.greaterThan(Date.parse(listedKey('Test system').created_at));
      expect(JSON.stringify(listed)).not.to.contain(world.key.slice(KEY_PREFIX.length));
    });

    it('logs every read with key, time, call, filters and rows, and `sdx reads` lists the last ones newest first', async () => {
      const reader = keys.readOnly;
      const started = Date.now();
      const a = await call<AnswerOf<'listFormRecords', 200>>('GET', '/api/v1/studies/DEMO/records?visit=week4&form=vs&limit=1', { key: reader.key });
      const b = await call<AnswerOf<'listPatients', 200>>('GET', '/api/v1/studies/DEMO/patients?site=02', { key: keys.full.key });
      const c = await call<AnswerOf<'listQueries', 200>>('GET', '/api/v1/studies/DEMO/queries?status=open&updated_since=2020-01-01T00:00:00Z', { key: reader.key });
      // A refused read is not a read: it is not logged.
      expect((await call('GET', '/api/v1/studies/DEMO/records?visit=nowhere', { key: reader.key })).status).to.equal(400);
      const listed = await sdx<{ reads: { at: string }[] }>('reads', '--study', 'DEMO', '--limit', '3');
      expect(listed.reads.map((r) => ({ ...r, at: undefined }))).to.deep.equal([
        { key_id: reader.id, key_name: 'Reader', at: undefined, operation: 'queries', filters: { status: 'open', updated_since: '2020-01-01T00:00:00Z', limit: 500 }, rows: c.body.queries.length },
        { key_id: keys.full.id, key_name: 'Test system', at: undefined, operation: 'patients', filters: { site: '02', limit: 500 }, rows: b.body.patients.length },
        { key_id: reader.id, key_name: 'Reader', at: undefined, operation: 'records', filters: { visit: 'week4', form: 'vs', limit: 1 }, rows: 1 },
      ]);
      expect(a.body.records).to.have.length(1);
      for (const r of listed.reads) expect(Date.parse(r.at)).to.be.within(started - 5000, Date.now());
      const study = present(await app.db.knex<{ id: number; code: string }>('studies').where({ code: 'DEMO' }).first(), 'study DEMO');
      const total = await app.db.knex('read_log').where({ study_id: study.id }).count<{ n: number }[]>('* as n');
      expect(Number(at(total, 0).n)).to.be.greaterThan(3);

      expect((await sdx<{ error: unknown }>('reads', '--study', 'DEMO', '--limit', '0')).error).to.include({ code: 'invalid_reads_limit', message: 'The number of reads to list is a whole number from 1 to 1000.' });
    });

    it('refuses a read key to a manager without the export right with a clear message on the command line', async () => {
      await addPerson(app.db.knex, 'DEMO', 'plain-manager@sdx.test', { role: 'manager', canExport: false });
      const refused = await sdx<{ error: unknown }>('key', 'create', 'DEMO', '--by', 'plain-manager@sdx.test', '--name', 'Export', '--rights', 'read', '--term', '30');
      expect(refused.error).to.include({
        code: 'export_right_missing',
        message: 'Only a manager who may export data can make a key with the read right; plain-manager@sdx.test may not.',
      });
      const writer = await sdx<{ key: string; sites: string[]; expires_at: string }>('key', 'create', 'DEMO', '--by', 'plain-manager@sdx.test', '--name', 'Lab', '--rights', 'write', '--sites', '01', '--term', '365');
      expect(writer).to.include({ name: 'Lab', study: 'DEMO' });
      expect(writer.sites).to.deep.equal(['01']);
      expect(writer.key).to.match(/^sdx_[0-9A-Za-z]{49}$/);
      expect(Date.parse(writer.expires_at) - Date.now()).to.be.within(364 * 86_400_000, 365 * 86_400_000);
      expect((await call('GET', '/api/v1/studies/DEMO', { key: writer.key })).status).to.equal(200);
      expect(await app.db.knex('api_keys').where({ name: 'Export' }).first()).to.equal(undefined);
    });
  });
});
