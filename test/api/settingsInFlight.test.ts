import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import type { StudySettings } from '../../src/domain/stores.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { at, only, present } from '../helpers/only.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * A study locked (or its enrolment closed) while a write is under way. A request's key, and the study with
 * it, are looked up from its headers, before its body arrives, which may take up to BODY_DEADLINE_SECONDS
 * (a 5 MB FHIR file on a slow line): the write must judge the study as it stands when it writes, not as it
 * stood then. And a lock committed while a write waits (on a row another writer holds) must not let that
 * write land after it: no data changes once the study's database is locked.
 */
describe('study settings changed while a write is in flight', function () {
  this.timeout(60_000);
  const { app, world } = useStudyWorld();
  const base = () => `/api/v1/studies/${world.code}`;
  const knex = () => app.db.knex;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const settle = (settings: StudySettings) => inTransaction(knex(), (s) => changeStudySettings(s, operator, world.code, settings));
  const count = async (table: string) => Number(present(await knex()(table).count<{ n: string }>('* as n').first(), `the count of ${table}`).n);
  const footprint = async () => ({
    patients: await count('patients'), records: await count('records'), queries: await count('queries'), query_answers: await count('query_answers'),
    fhir_imports: await count('fhir_imports'), audit_events: await count('audit_events'),
  });
  const requestsCounted = async () => Number(present(await knex()('api_keys').where({ id: world.keyId }).first<{ request_count: string } | undefined>('request_count'), 'the key').request_count);

  /**
   * Sends a POST's headers and the first half of its body, and waits until the service has looked its key
   * (and the study) up; `finish` sends the rest and gives the answer, checked against the spec.
   */
  async function startSlowly(operationId: string, path: string, body: string, contentType = 'application/json') {
    const bytes = Buffer.from(body, 'utf8');
    const counted = await requestsCounted();
    const req = request(`${app.baseUrl}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${world.key}`, 'content-type': contentType, 'content-length': String(bytes.length) },
    });
    const answer = new Promise<{ status: number; contentType: string; text: string }>((resolve, reject) => {
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
    });
    const half = Math.floor(bytes.length / 2);
    req.write(bytes.subarray(0, half));
    // The service looks the key up, and counts the request, from the headers alone.
    while ((await requestsCounted()) === counted) await pause(10);
    return {
      async finish<T>(): Promise<{ status: number; body: T }> {
        req.end(bytes.subarray(half));
        const { status, contentType: type, text } = await answer;
        const parsed: unknown = JSON.parse(text);
        await assertMatchesSpec(operationId, status, type, parsed);
        return { status, body: parsed as T };
      },
    };
  }

  async function enrol(body: Record<string, unknown> = {}): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base()}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28', ...body },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(knex(), world.code, res.body.subject, '2016-12-28');
    return res.body.subject;
  }

  const vitals = (subject: string, sbp: string, update = false) => ({
    subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp, dbp: '80', hr: '70' }, ...(update ? { update: true } : {}),
  });

  async function submit(records: unknown[]) {
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, { key: world.key, body: { records } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.results;
  }

  /** How many backends of this database wait for a lock. */
  async function lockWaiters(): Promise<number> {
    const { rows } = await knex().raw<{ rows: { n: number }[] }>("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()");
    return only(rows).n;
  }

  async function untilLockWaiters(n: number): Promise<void> {
    while ((await lockWaiters()) < n) await pause(10);
  }

  afterEach(() => settle({ locked: false, enrolmentOpen: true }));

  const cases: { name: string; settings: StudySettings; code: string; call: () => Promise<{ operationId: string; path: string; body: string; contentType?: string }> }[] = [
    {
      name: 'an enrolment', settings: { locked: true }, code: 'study_locked',
      call: () => Promise.resolve({ operationId: 'createPatient', path: `${base()}/patients`, body: JSON.stringify({ site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-01' }) }),
    },
    {
      name: 'an enrolment', settings: { enrolmentOpen: false }, code: 'enrolment_closed',
      call: () => Promise.resolve({ operationId: 'createPatient', path: `${base()}/patients`, body: JSON.stringify({ site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-01' }) }),
    },
    {
      name: 'a records call', settings: { locked: true }, code: 'study_locked',
      call: async () => ({ operationId: 'submitFormRecords', path: `${base()}/records`, body: JSON.stringify({ records: [vitals(await enrol(), '232')] }) }),
    },
    {
      name: 'a FHIR file in save mode', settings: { locked: true }, code: 'study_locked',
      call: async () => ({
        operationId: 'importFhirRecord', path: `${base()}/fhir?subject=${await enrol()}&mode=save`, contentType: 'application/fhir+json',
        body: readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json', 'utf8'),
      }),
    },
    {
      name: 'an answer to a query', settings: { locked: true }, code: 'study_locked',
      call: async () => {
        const subject = await enrol();
        expect(only(await submit([vitals(subject, '232')])).code).to.equal('saved_with_queries');
        const [query] = await knex()('queries as q').join('patients as p', 'p.id', 'q.patient_id').where('p.subject', subject).select<{ id: number }[]>('q.id');
        return { operationId: 'answerQuery', path: `${base()}/queries/${present(query, 'the query').id}/answers`, body: JSON.stringify({ text: 'Confirmed at the source.' }) };
      },
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name} whose body arrives after the study was ${c.settings.locked ? 'locked' : 'closed to enrolment'} (423 ${c.code}), and keeps nothing`, async () => {
      const call = await c.call();
      const before = await footprint();
      const slow = await startSlowly(call.operationId, call.path, call.body, call.contentType);
      await settle(c.settings);
      const auditAfterSettle = (await footprint()).audit_events;
      const res = await slow.finish<Problem>();
      expect({ status: res.status, code: res.body.code }).to.deep.equal({ status: 423, code: c.code });
      expect(await footprint()).to.deep.equal({ ...before, audit_events: auditAfterSettle });
    });
  }

  it('makes a lock wait for a write already under way, so that no write lands after the lock', async () => {
    const subject = await enrol();
    expect(only(await submit([vitals(subject, '120')])).code).to.equal('saved');
    const record = present(await knex()('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', subject).first<{ id: number } | undefined>('r.id'), 'the record');
    // Another writer holds the record: the update below starts, then waits for it.
    const holder = await knex().transaction();
    try {
      await holder('records').where({ id: record.id }).forUpdate().select('id');
      const events: string[] = [];
      const write = submit([vitals(subject, '150', true)]).then((results) => { events.push('write'); return results; });
      await untilLockWaiters(1);
      const lock = settle({ locked: true }).then(() => { events.push('lock'); });
      // Either the lock is done at once, or it waits too (for the write under way).
      await Promise.race([lock, untilLockWaiters(2)]);
      await holder.commit();
      const results = await write;
      await lock;
      expect(events).to.deep.equal(['write', 'lock']);
      expect(at(results, 0).code).to.equal('saved');
    } finally {
      if (!holder.isCompleted()) await holder.rollback();
    }
    const refused = await app.call<Problem>('POST', `${base()}/records`, { key: world.key, body: { records: [vitals(subject, '160', true)] } });
    expect(refused.status).to.equal(423);
  });
});
