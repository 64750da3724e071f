import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { giveConsent, makeKey, operator } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply } from '../helpers/testApp.js';
import { testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * `Idempotency-Key` on the three write calls (spec: "Retries without duplicates"), through real HTTP on
 * a real database: replays change nothing, another request under a used key is refused, keys are kept
 * apart per API key and per call, concurrent retries in two processes write once, refused and dead
 * requests keep nothing, and keys are forgotten after 24 hours.
 */

/** One request as sent on the wire. */
interface Sent { path: string; body: string; contentType: string }

/** A write call under test: `prepare` builds a fresh target (a patient) and returns its request A or B (another body). */
interface WriteCall {
  operation: 'createPatient' | 'submitFormRecords' | 'importFhirRecord';
  status: number;
  /** The table the call writes after claiming its key: a test holds it to keep the call in flight. */
  table: Table;
  prepare(): Promise<(variant: 'a' | 'b') => Sent>;
}

const TABLES = ['patients', 'records', 'queries', 'audit_events', 'fhir_imports', 'idempotency_keys'] as const;
type Table = typeof TABLES[number];
type Submitted = AnswerOf<'submitFormRecords', 200>;

/** The same JSON data written differently: members in reverse order, indented. */
function rewritten(sent: Sent): Sent {
  const reverse = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reverse);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reverse(v)]));
    return value;
  };
  return { ...sent, body: JSON.stringify(reverse(JSON.parse(sent.body) as unknown), null, 2) };
}

describe('Idempotency-Key (createPatient, submitFormRecords, importFhirRecord)', function () {
  this.timeout(120_000);
  const { app, world } = useStudyWorld();
  let otherKey: string;
  let second: ServiceProcess;

  const newKey = () => `retry-${randomUUID()}`;
  const knex = () => app.db.knex;

  /** Sends a request to the in-process service or to the second process; every answer is checked against the spec. */
  async function send<T = unknown>(to: 'app' | ServiceProcess, sent: Sent, options: { idem?: string; key?: string; query?: string } = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = options.idem === undefined ? {} : { 'idempotency-key': options.idem };
    const path = `${sent.path}${options.query ? `${sent.path.includes('?') ? '&' : '?'}${options.query}` : ''}`;
    if (to === 'app') return app.call<T>('POST', path, { key: options.key ?? world.key, raw: sent.body, contentType: sent.contentType, headers });
    const response = await fetch(`${to.baseUrl}${path}`, {
      method: 'POST', body: sent.body, headers: { ...headers, authorization: `Bearer ${options.key ?? world.key}`, 'content-type': sent.contentType },
    });
    const body = await response.json() as T;
    const collection = present(sent.path.split('?')[0]?.split('/').pop(), `the collection of ${sent.path}`);
    const operation = present(({ patients: 'createPatient', records: 'submitFormRecords', fhir: 'importFhirRecord' } as Record<string, string>)[collection], `the operation of ${sent.path}`);
    await assertMatchesSpec(operation, response.status, response.headers.get('content-type') ?? '', body);
    return { status: response.status, headers: response.headers, body };
  }

  async function footprint(): Promise<Record<Table, number>> {
    const counts: Partial<Record<Table, number>> = {};
    for (const table of TABLES) counts[table] = Number(at(await knex()(table).count<{ n: string }[]>({ n: '*' }), 0).n);
    // Every table of TABLES was counted just above.
    return counts as Record<Table, number>;
  }

  /** Waits (bounded) until at least `count` lock requests in this database are waiting. */
  async function lockWaits(count: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { rows } = await knex().raw<{ rows: { n: number }[] }>(`select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where not l.granted and a.datname = current_database()`);
      if (at(rows, 0).n >= count) return;
      if (Date.now() > deadline) throw new Error(`fewer than ${count} lock waits after 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Runs `inFlight` while a transaction holds `table` against writes, so requests sent meanwhile stay in flight. */
  async function holding<T>(table: string, inFlight: () => Promise<T>): Promise<T> {
    // As the owner: the service's runtime role may not lock the audit trail against writes.
    const locker = await (await testOwnerDatabase()).knex.transaction();
    try {
      await locker.raw(`lock table ${table} in share mode`);
      return await inFlight();
    } finally {
      await locker.commit();
    }
  }

  async function enrolled(sex = 'female', birthYear = 1970, enrolledOn = '2026-01-15'): Promise<string> {
    const res = await send<AnswerOf<'createPatient', 201>>('app', { path: `/api/v1/studies/${world.code}/patients`, contentType: 'application/json', body: JSON.stringify({ site: '01', sex, birth_year: birthYear, enrolled_on: enrolledOn }) });
    expect(res.status).to.equal(201);
    await giveConsent(knex(), world.code, res.body.subject, '2020-01-01');
    return res.body.subject;
  }

  const setLocked = (locked: boolean) => inTransaction(knex(), (s) => changeStudySettings(s, operator, world.code, { locked }));

  const CALLS: [WriteCall, WriteCall, WriteCall] = [
    {
      operation: 'createPatient', status: 201, table: 'patients',
      prepare: () => Promise.resolve((variant) => ({
        path: `/api/v1/studies/${world.code}/patients`, contentType: 'application/json',
        body: JSON.stringify({ site: '01', sex: 'female', birth_year: variant === 'a' ? 1961 : 1962, enrolled_on: '2026-01-15' }),
      })),
    },
    {
      operation: 'submitFormRecords', status: 200, table: 'records',
      prepare: async () => {
        const subject = await enrolled();
        return (variant) => ({
          path: `/api/v1/studies/${world.code}/records`, contentType: 'application/json',
          // sbp 232 is above the field's range (max 220): request A also opens a query.
          body: JSON.stringify({ records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-01-10', sbp: variant === 'a' ? '232' : '120', dbp: '80', hr: '70' } }] }),
        });
      },
    },
    {
      operation: 'importFhirRecord', status: 201, table: 'fhir_imports',
      prepare: async () => {
        const subject = await enrolled('female', 1970, '2026-03-09');
        return (variant) => ({
          path: `/api/v1/studies/${world.code}/fhir?subject=${subject}&mode=save`, contentType: 'application/fhir+json',
          body: JSON.stringify({
            resourceType: 'Observation', id: 'hr-20260309', status: 'final', subject: { reference: 'Patient/p-7f3a' },
            code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
            effectiveDateTime: '2026-03-09T09:40:00+03:00',
            valueQuantity: { value: variant === 'a' ? 76 : 80, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
          }),
        });
      },
    },
  ];

  before(async () => {
    otherKey = (await makeKey(knex(), { study: world.code, by: world.manager, name: 'Other system' })).key;
    second = await startServiceProcess({});
  });
  after(async () => {
    await second?.stop();
  });

  for (const call of CALLS) {
    describe(call.operation, () => {
      it('answers the same key and request again with the first answer, marked Idempotent-Replayed, and changes nothing', async () => {
        const request = await call.prepare();
        const key = newKey();
        const first = await send('app', request('a'), { idem: key });
        expect(first.status).to.equal(call.status);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        const before = await footprint();

        const again = await send('app', request('a'), { idem: key });
        expect(again.status).to.equal(call.status);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        // The same data written otherwise is the same request; the replay keeps the first answer's language.
        const otherwise = await send('app', rewritten(request('a')), { idem: key, query: 'lang=ru' });
        expect(otherwise.status).to.equal(call.status);
        expect(otherwise.headers.get('idempotent-replayed')).to.equal('true');
        expect(otherwise.body).to.deep.equal(first.body);
        expect(await footprint()).to.deep.equal(before);
      });

      it('refuses the same key with another request (422 idempotency_key_reused) and changes nothing', async () => {
        const request = await call.prepare();
        const key = newKey();
        expect((await send('app', request('a'), { idem: key })).status).to.equal(call.status);
        const before = await footprint();
        const refused = await send('app', request('b'), { idem: key });
        expect(refused.status).to.equal(422);
        expect(refused.body).to.deep.include({
          status: 422, code: 'idempotency_key_reused', title: 'Idempotency key used for another request',
          detail: 'This Idempotency-Key came with another request within the last 24 hours. Send a new request with a new key.',
        });
        const ru = await send('app', request('b'), { idem: key, query: 'lang=ru' });
        expect(ru.body).to.deep.include({ code: 'idempotency_key_reused', title: 'Ключ идемпотентности использован для другого запроса' });
        expect(await footprint()).to.deep.equal(before);
      });

      it('keeps keys apart per API key: another API key with the same value runs its request anew', async () => {
        const request = await call.prepare();
        const key = newKey();
        const first = await send('app', request('a'), { idem: key });
        const before = await footprint();
        const other = await send('app', request('a'), { idem: key, key: otherKey });
        expect(other.status).to.equal(call.status);
        expect(other.headers.get('idempotent-replayed')).to.equal(null);
        // A new patient, a skipped record (already filled by the first), a second import.
        expect(other.body).to.not.deep.equal(first.body);
        expect((await footprint()).idempotency_keys).to.equal(before.idempotency_keys + 1);
      });

      it('writes once for two requests with the same key in two processes: the second waits for the first, then replays it', async () => {
        const request = await call.prepare();
        const key = newKey();
        const before = await footprint();
        const [first, retry] = await holding(call.table, async () => {
          // The first claims the key and waits for the table; the retry waits for the first's claim.
          const inSecondProcess = send(second, request('a'), { idem: key });
          await lockWaits(1);
          const inThisProcess = send('app', request('a'), { idem: key });
          await lockWaits(2);
          return [inSecondProcess, inThisProcess] as const;
        }).then((pending) => Promise.all(pending));
        expect([first.status, retry.status]).to.deep.equal([call.status, call.status]);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        expect(retry.headers.get('idempotent-replayed')).to.equal('true');
        expect(retry.body).to.deep.equal(first.body);
        const after = await footprint();
        expect(after[call.table]).to.equal(before[call.table] + 1);
        expect(after.idempotency_keys).to.equal(before.idempotency_keys + 1);
      });

      it('keeps nothing of a refused request (423 study_locked): the same key then runs anew', async () => {
        const request = await call.prepare();
        const key = newKey();
        const before = await footprint();
        await setLocked(true);
        try {
          const refused = await send<Problem>('app', request('a'), { idem: key });
          expect(refused.status).to.equal(423);
          expect(refused.body.code).to.equal('study_locked');
        } finally {
          await setLocked(false);
        }
        // Locking and unlocking the study are audited (one row each); nothing else changed.
        expect(await footprint()).to.deep.equal({ ...before, audit_events: before.audit_events + 2 });
        const retry = await send('app', request('a'), { idem: key });
        expect(retry.status).to.equal(call.status);
        expect(retry.headers.get('idempotent-replayed')).to.equal(null);
        expect((await footprint()).idempotency_keys).to.equal(before.idempotency_keys + 1);
      });

      it('forgets a key after 24 hours: the same request then runs anew, taking the key over', async () => {
        const request = await call.prepare();
        const key = newKey();
        const first = await send('app', request('a'), { idem: key });
        await knex()('idempotency_keys').where({ idempotency_key: key }).update({ created_at: knex().raw("now() - interval '24 hours 1 second'") });
        const before = await footprint();
        const anew = await send('app', request('a'), { idem: key });
        expect(anew.status).to.equal(call.status);
        expect(anew.headers.get('idempotent-replayed')).to.equal(null);
        expect(anew.body).to.not.deep.equal(first.body);
        expect((await footprint()).idempotency_keys).to.equal(before.idempotency_keys);
        // Taken over: the key now holds the new answer for another 24 hours.
        const replay = await send('app', request('a'), { idem: key });
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        expect(replay.body).to.deep.equal(anew.body);
      });
    });
  }

  it('keeps a key apart per call: the value used on createPatient is free on submitFormRecords', async () => {
    const key = newKey();
    const patient = await send('app', await CALLS[0].prepare().then((r) => r('a')), { idem: key });
    expect(patient.status).to.equal(201);
    const records = await send<Submitted>('app', await CALLS[1].prepare().then((r) => r('a')), { idem: key });
    expect(records.status).to.equal(200);
    expect(records.headers.get('idempotent-replayed')).to.equal(null);
    expect(at(records.body.results, 0)).to.include({ status: 'warn', code: 'saved_with_queries' });
  });

  it('keeps nothing for validate_only=true: a dry run answers anew each time and leaves its key free', async () => {
    const request = await CALLS[1].prepare();
    const key = newKey();
    const before = await footprint();
    for (const variant of ['a', 'b', 'a'] as const) {
      const dry = await send<Submitted>('app', request(variant), { idem: key, query: 'validate_only=true' });
      expect(dry.status).to.equal(200);
      expect(dry.headers.get('idempotent-replayed')).to.equal(null);
      expect(at(dry.body.results, 0).code).to.equal('validated');
    }
    expect(await footprint()).to.deep.equal(before);
    const saved = await send<Submitted>('app', request('a'), { idem: key });
    expect(saved.headers.get('idempotent-replayed')).to.equal(null);
    expect(at(saved.body.results, 0).code).to.equal('saved_with_queries');
  });

  it('refuses an Idempotency-Key that is empty, too long or not printable ASCII with 400 invalid_parameter, keeping nothing', async () => {
    const request = (await CALLS[0].prepare())('a');
    const before = await footprint();
    for (const value of ['', 'two words', 'k'.repeat(256), 'caf\u00e9']) {
      const res = await send<Problem>('app', request, { idem: value });
      expect(res.status, JSON.stringify(value)).to.equal(400);
      expect(res.body.code).to.equal('invalid_parameter');
      expect(res.body.errors?.map((e) => e.pointer)).to.deep.equal(['/header/idempotency-key']);
    }
    expect(await footprint()).to.deep.equal(before);
    const longest = await send('app', request, { idem: '~'.repeat(255) });
    expect(longest.status).to.equal(201);
  });

  it('removes keys past 24 hours as new answers are kept', async () => {
    const request = await CALLS[0].prepare();
    const old = newKey();
    await send('app', request('a'), { idem: old });
    await knex()('idempotency_keys').where({ idempotency_key: old }).update({ created_at: knex().raw("now() - interval '25 hours'") });
    await send('app', request('a'), { idem: newKey(), key: otherKey });
    expect(await knex()('idempotency_keys').where({ idempotency_key: old })).to.deep.equal([]);
  });

  it('keeps nothing of a request whose process died in the middle: its retry runs anew', async () => {
    const doomed = await startServiceProcess({});
    try {
      const request = (await CALLS[0].prepare())('a');
      const key = newKey();
      const before = await footprint();
      const lost = await holding('patients', async () => {
        const pending = send(doomed, request, { idem: key }).then(() => 'answered', () => 'no answer');
        // The request has claimed its key and waits to insert the patient when its process is killed.
        await lockWaits(1);
        doomed.kill('SIGKILL');
        await doomed.exited;
        return pending;
      });
      expect(lost).to.equal('no answer');
      const retry = await send('app', request, { idem: key });
      expect(retry.status).to.equal(201);
      expect(retry.headers.get('idempotent-replayed')).to.equal(null);
      const after = await footprint();
      expect(after.patients).to.equal(before.patients + 1);
      expect(after.idempotency_keys).to.equal(before.idempotency_keys + 1);
    } finally {
      await doomed.stop();
    }
  });
});
