import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import type { StudySettings } from '../../src/domain/stores.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { only, present } from '../helpers/only.js';
import { slowPostOnceCounted } from '../helpers/slowPost.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * A study locked (or its enrolment closed) while a write is under way. A request's key, and the study with
 * it, are looked up from its headers, before its body arrives, which may take up to BODY_DEADLINE_SECONDS
 * (a 5 MB FHIR file on a slow line): the write must judge the study as it stands when it writes, not as it
 * stood then (test/api/lockedWhileWriting.test.ts: a lock committed while a write is already running).
 */
describe('study settings changed while a write is in flight', function () {
  this.timeout(60_000);
  const { app, world } = useStudyWorld();
  const base = () => `/api/v1/studies/${world.code}`;
  const knex = () => app.db.knex;

  const settle = (settings: StudySettings) => inTransaction(knex(), (s) => changeStudySettings(s, operator, world.code, settings));
  const count = async (table: string) => Number(present(await knex()(table).count<{ n: string }>('* as n').first(), `the count of ${table}`).n);
  const footprint = async () => ({
    patients: await count('patients'), records: await count('records'), queries: await count('queries'), query_answers: await count('query_answers'),
    fhir_imports: await count('fhir_imports'), audit_events: await count('audit_events'),
  });

  /**
   * Sends a POST's headers and the first half of its body, and waits until the service has looked its key
   * (and the study) up; `finish` sends the rest and gives the answer, checked against the spec.
   */
  async function startSlowly(operationId: string, path: string, body: string, contentType?: string) {
    const upload = await slowPostOnceCounted(knex(), app.baseUrl, path, { key: world.key, id: world.keyId }, body, contentType);
    return {
      async finish<T>(): Promise<{ status: number; body: T }> {
        const { status, headers, body: text } = await upload.finish();
        const parsed: unknown = JSON.parse(text);
        await assertMatchesSpec(operationId, status, present(headers['content-type'], 'the Content-Type'), parsed);
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

  const vitals = (subject: string, sbp: string) => ({ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp, dbp: '80', hr: '70' } });

  async function submit(records: unknown[]) {
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, { key: world.key, body: { records } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.results;
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
});
