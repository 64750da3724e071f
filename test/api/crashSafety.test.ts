import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createStores } from '../../src/db/stores.js';
import { verifyAuditTrail } from '../../src/domain/studies/verifyAuditTrail.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { createStudyWorld, demoDesign, giveConsent, type StudyWorld } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { unscheduledVisitsBody } from '../helpers/recordBodies.js';
import { blockedIn, connectionsOf, until } from '../helpers/serviceActivity.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { CASES } from '../helpers/syntheaCases.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * The service process killed with SIGKILL in the middle of a 500-record call and of a FHIR save, at
 * moments the test pins down: its own transaction holds a row or a table the request is about to write,
 * so the request stops exactly there, or the request's commit has become visible. After a restart each
 * study holds all of the request's effect or none of it, and the client's retry of the same request
 * leaves exactly what the request leaves, sent once without a crash, in a control study.
 */

type Row = Record<string, unknown>;

/** A record as contentOf reads it: its place, and what it holds. */
interface RecordContent { subject: string; visit: string; form: string; instance: number; site: string; status: string; source: string; values: Record<string, string>; not_done: Record<string, string>; tables: Record<string, unknown[]> }

/** An audit row as contentOf gives it: the record by its place. */
interface AuditContent { record: string | null; action: string; field_code: string | null; [column: string]: unknown }

/** What a study holds that a write may change (see contentOf). */
interface StudyContent { patients: Row[]; records: RecordContent[]; queries: Row[]; audit: AuditContent[]; imports: Row[]; items: Row[] }

interface Request { path: string; body: string; contentType: string; headers?: Record<string, string> }

interface Moment {
  name: string;
  /** Taken in the test's own transaction before the request is sent; the request waits on it until after the kill. */
  hold?: (trx: Knex.Transaction, study: StudyWorld) => Promise<unknown>;
  /** The statement the request must be blocked in (with a hold), or the committed data that must be visible (without). */
  reached: RegExp | ((knex: Knex, study: StudyWorld) => Promise<boolean>);
  /** What the killed request leaves: none of its effect, or all of it. */
  leaves: 'nothing' | 'everything';
}

const SUBJECTS = ['01-101', '01-102', '02-101', '02-102'];
const FLETCHER = present(CASES.find((c) => c.file === 'smart-fletcher-hyatt-3794kb.json'), 'the Fletcher case');
const FHIR_SUBJECT = '01-150';

const withoutIds = (details: Row) => Object.fromEntries(Object.entries(details).filter(([name]) => !name.endsWith('_id')));

/**
 * What a study holds that a write may change, without ids, times and hashes, and with the study's code
 * masked (its manager's name carries it): two studies given the same requests compare equal. Audit rows
 * count from `auditSince`, so the study's own setup is left out.
 */
async function contentOf(knex: Knex, code: string, auditSince: number): Promise<StudyContent> {
  const { id: studyId } = present(await knex('studies').where({ code }).first<{ id: number } | undefined>('id'), `study ${code}`);
  const records = await knex('records as r').join('patients as p', 'p.id', 'r.patient_id').join('visits as v', 'v.id', 'r.visit_id')
    .join('forms as f', 'f.id', 'r.form_id').join('sites as s', 's.id', 'r.site_id').where('r.study_id', studyId)
    .orderBy(['p.subject', 'v.code', 'f.code', 'r.instance'])
    .select<(RecordContent & { id: number })[]>('r.id', 'p.subject', 'v.code as visit', 'f.code as form', 'r.instance', 's.number as site', 'r.status', 'r.source', 'r.values', 'r.not_done', 'r.tables');
  const place = new Map<number, string>(records.map((r) => [r.id, `${r.subject}/${r.visit}/${r.form}/${r.instance}`]));
  const recordOf = (id: number | null) => (id === null ? null : place.get(id) ?? `missing record ${id}`);
  const queries = await knex('queries as q').join('sites as s', 's.id', 'q.site_id').where('q.study_id', studyId).orderBy('q.id')
    .select<({ record_id: number | null } & Row)[]>('q.record_id', 's.number as site', 'q.field_code', 'q.origin', 'q.check_code', 'q.status', 'q.message', 'q.opened_by');
  const audit = await knex('audit_events as a').leftJoin('patients as p', 'p.id', 'a.patient_id').where('a.study_id', studyId).where('a.id', '>', auditSince)
    .orderBy('a.id').select<({ record_id: number | null; details: Row } & Row)[]>('a.record_id', 'p.subject', 'a.actor_type', 'a.author', 'a.reason', 'a.action', 'a.field_code', 'a.old_value', 'a.new_value', 'a.details');
  const imports = await knex('fhir_imports as i').join('patients as p', 'p.id', 'i.patient_id').where('i.study_id', studyId).orderBy('i.id')
    .select<Row[]>('p.subject', 'i.number', 'i.mode', 'i.status', 'i.counts', 'i.fhir_identity');
  const items = (await knex('fhir_imports').where('study_id', studyId).orderBy('id').select<{ number: number; items: Row[] }[]>('number', 'items'))
    .flatMap((i) => i.items.map((item, position) => ({ number: i.number, position, ...item })));
  const patients = await knex('patients').where({ study_id: studyId }).orderBy('subject').select<Row[]>('subject', 'status', 'fhir_identity');
  const content = {
    patients,
    records: records.map((r) => Object.fromEntries(Object.entries(r).filter(([column]) => column !== 'id'))),
    queries: queries.map(({ record_id: recordId, ...q }) => ({ record: recordOf(recordId), ...q })),
    audit: audit.map(({ record_id: recordId, details, ...a }) => ({ record: recordOf(recordId), ...a, details: withoutIds(details) })),
    imports,
    items,
  };
  return JSON.parse(JSON.stringify(content).split(code).join('<study>')) as StudyContent;
}

describe('crash safety: the service process killed (SIGKILL) in the middle of a write', function () {
  // Each kill is followed by the start of a new service process, which compiles the service anew.
  this.timeout(180_000);
  let app: TestApp;
  let service: ServiceProcess;
  const knex = () => app.db.knex;
  const auditMark = async () => Number(at(await knex()('audit_events').max<{ m: number | null }[]>({ m: 'id' }), 0).m ?? 0);

  /** A study of the demo design with the records call's patients and the FHIR patient, enrolled and consented. */
  async function study(code: string): Promise<StudyWorld> {
    const world = await createStudyWorld(knex(), demoDesign(code));
    const patients = [
      ...SUBJECTS.map((subject) => ({ subject, site: subject.slice(0, 2), sex: 'female', birth_year: 1960, enrolled_on: '2026-01-05' })),
      { subject: FHIR_SUBJECT, site: '01', sex: FLETCHER.sex, birth_year: FLETCHER.birthYear, enrolled_on: FLETCHER.enrolledOn },
    ];
    for (const patient of patients) {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${code}/patients`, { key: world.key, body: patient });
      expect(enrolled.status, JSON.stringify(enrolled.body)).to.equal(201);
      await giveConsent(knex(), code, patient.subject, '2020-01-01');
    }
    return world;
  }

  const send = (baseUrl: string, world: StudyWorld, request: Request) => fetch(`${baseUrl}/api/v1/studies/${world.code}${request.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${world.key}`, 'content-type': request.contentType, ...request.headers },
    body: request.body,
    signal: AbortSignal.timeout(30_000),
  });

  /**
   * Sends the request to the running service process, kills the process with SIGKILL at the moment,
   * waits until PostgreSQL has ended every connection of the dead process, and starts a new one.
   */
  async function killDuring(world: StudyWorld, request: Request, moment: Moment): Promise<void> {
    const victim = service;
    // As the owner: the service's runtime role may not lock the audit trail against writes.
    const trx = moment.hold ? await (await testOwnerDatabase()).knex.transaction() : undefined;
    try {
      if (trx) await moment.hold?.(trx, world);
      let answered = false;
      const answer = send(victim.baseUrl, world, request).then((response) => response.text()).catch(() => undefined).finally(() => { answered = true; });
      await until(async () => {
        if (moment.reached instanceof RegExp) {
          if (answered) throw new Error(`the request was answered before it reached ${moment.name}`);
          return blockedIn(knex(), victim.pid, moment.reached);
        }
        return moment.reached(knex(), world);
      }, `the request to reach ${moment.name}`);
      victim.kill('SIGKILL');
      expect(await victim.exited).to.deep.equal({ code: null, signal: 'SIGKILL' });
      await answer;
    } finally {
      await trx?.rollback();
    }
    // A backend notices its client is gone when it next talks to it: the one that waited on the hold does when its statement ends.
    await until(async () => (await connectionsOf(knex(), victim.pid)) === 0, 'PostgreSQL to end the connections of the killed process');
    service = await startServiceProcess({});
  }

  before(async function () {
    this.timeout(120_000);
    [app, service] = await Promise.all([startTestApp(), startServiceProcess({})]);
    await resetDatabase(knex());
  });
  after(async () => {
    await service?.stop();
    await app?.close();
  });

  /**
   * One describe per kind of request: a control study gets it once without a crash, then each moment kills
   * the service during the request to a study of its own, checks the study after the restart, and retries.
   */
  function crashCases<Body>(kind: string, prefix: string, request: (world: StudyWorld) => Request, moments: Moment[], answerShape: (body: Body) => unknown) {
    describe(kind, () => {
      let control: { before: StudyContent; after: StudyContent; answer: unknown };

      before(async () => {
        const world = await study(`${prefix}-CONTROL`);
        const mark = await auditMark();
        const before = await contentOf(knex(), world.code, mark);
        const sent = request(world);
        const answer = await app.call<Body>('POST', `/api/v1/studies/${world.code}${sent.path}`, { key: world.key, raw: sent.body, contentType: sent.contentType, headers: sent.headers });
        expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).to.be.oneOf([200, 201]);
        control = { before, after: await contentOf(knex(), world.code, mark), answer: answerShape(answer.body) };
        // The control's effect is whole: each record it saved has one audit row per value and table it holds.
        expect(control.after.records.length).to.be.greaterThan(0);
        for (const r of control.after.records) {
          const place = `${r.subject}/${r.visit}/${r.form}/${r.instance}`;
          const audited = control.after.audit.filter((a) => a.record === place && a.action === 'record.value_set').map((a) => a.field_code);
          expect(audited.sort(), place).to.deep.equal([...Object.keys(r.values), ...Object.keys(r.tables)].sort());
        }
      });

      moments.forEach((moment, i) => {
        it(`killed ${moment.name}: after the restart the study holds ${moment.leaves === 'nothing' ? 'none' : 'all'} of it, and a retry ends as one request without a crash`, async () => {
          const world = await study(`${prefix}-KILLED-${i + 1}`);
          const mark = await auditMark();
          const sent = request(world);
          await killDuring(world, sent, moment);

          const afterCrash = await contentOf(knex(), world.code, mark);
          expect(afterCrash).to.deep.equal(moment.leaves === 'nothing' ? control.before : control.after);
          const retried = await send(service.baseUrl, world, sent);
          const body = await retried.json() as Body;
          expect(retried.status, JSON.stringify(body).slice(0, 500)).to.be.oneOf([200, 201]);
          // Nothing was kept, so the retry is the request's first real run and answers as the control did.
          if (moment.leaves === 'nothing') expect(answerShape(body)).to.deep.equal(control.answer);
          expect(await contentOf(knex(), world.code, mark)).to.deep.equal(control.after);
          expect(await verifyAuditTrail(createStores(knex()), world.code)).to.include({ ok: true });
        });
      });
    });
  }

  /** The call's record at `index`, written by the test's own transaction and not committed: the request waits on its unique key. */
  const holdRecord = (index: number) => async (trx: Knex.Transaction, world: StudyWorld) => {
    const record = at(unscheduledVisitsBody(SUBJECTS).records, index);
    const ids = await trx('patients as p').join('studies as st', 'st.id', 'p.study_id').join('visits as v', 'v.study_id', 'st.id').join('forms as f', 'f.study_id', 'st.id')
      .where({ 'st.code': world.code, 'p.subject': record.subject, 'v.code': record.visit, 'f.code': record.form })
      .first<Row | undefined>('st.id as study_id', 'p.id as patient_id', 'p.site_id', 'v.id as visit_id', 'f.id as form_id');
    await trx('records').insert({ ...ids, instance: record.instance, status: 'draft', source: 'api' });
  };
  const lockTable = (table: string) => (trx: Knex.Transaction) => trx.raw('lock table ?? in share mode', [table]);
  const committed = (table: string) => async (db: Knex, world: StudyWorld) =>
    Number(at(await db(table).join('studies as st', 'st.id', `${table}.study_id`).where('st.code', world.code).count<{ n: string }[]>({ n: '*' }), 0).n) > 0;

  crashCases(
    'a 500-record call',
    'CRASH-RECORDS',
    () => ({ path: '/records', body: JSON.stringify(unscheduledVisitsBody(SUBJECTS)), contentType: 'application/json' }),
    [
      { name: 'halfway, writing its 250th record', hold: holdRecord(249), reached: /^insert into "records"/, leaves: 'nothing' },
      { name: 'with every record and query written, before the audit trail', hold: lockTable('audit_events'), reached: /^insert into "audit_events"/, leaves: 'nothing' },
      { name: 'right after its commit', reached: committed('records'), leaves: 'everything' },
    ],
    (body: AnswerOf<'submitFormRecords', 200>) => ({ counts: body.counts, results: body.results.map((r) => [r.index, r.status, r.code, r.queries_opened, r.errors]) }),
  );

  // The largest Synthea bundle (3.8 MB); the retry carries the killed attempt's Idempotency-Key, or a
  // committed first attempt would leave a second import behind.
  const fhirBody = readFileSync(`test/fixtures/fhir/synthea/${FLETCHER.file}`, 'utf8');
  crashCases(
    'a FHIR save',
    'CRASH-FHIR',
    (world) => ({
      path: `/fhir?subject=${FHIR_SUBJECT}&mode=save`, body: fhirBody, contentType: 'application/fhir+json',
      headers: { 'idempotency-key': `crash-${world.code}` },
    }),
    [
      { name: 'with its records written, before the import', hold: lockTable('fhir_imports'), reached: /^insert into "fhir_imports"/, leaves: 'nothing' },
      { name: 'with everything written but the audit trail', hold: lockTable('audit_events'), reached: /^insert into "audit_events"/, leaves: 'nothing' },
      { name: 'right after its commit', reached: committed('fhir_imports'), leaves: 'everything' },
    ],
    (body: AnswerOf<'importFhirRecord', 201>) => ({ number: body.number, status: body.status, mode: body.mode, counts: body.counts, items: body.items }),
  );
});
