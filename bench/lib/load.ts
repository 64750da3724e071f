/**
 * Many integrators at once: autocannon (loopback only, bounded in time or in count) with one API key
 * per connection, on the design call and on small records calls. Shared by the integrators and the
 * scale-out scenarios.
 */
import autocannon from 'autocannon';
import type { Knex } from 'knex';
import { at } from '../../test/helpers/only.js';
import type { BenchContext } from './context.js';
import { cpuMs } from './service.js';
import { createStudy, demoDesign, makeKeys, seedPatients, type BenchPatient, type BenchStudy } from './world.js';

export const INTEGRATORS = 50;
/** Records per small records call. */
export const SMALL_CALL = 5;

/**
 * Length of one load run (BENCH_LOAD_SECONDS, default 3). Each key may send 600 requests a minute and
 * the rate windows are emptied before each run, so a run stays clear of 429 only while 50 keys send
 * fewer than 600 each: 3 s allows up to 10,000 requests a second, 4 s only 7,500, which the design call
 * came within 15 % of (6,650 req/s). A run that does get a 429 fails the bench (expectOnly) rather than mixing cheap refusals
 * into a throughput figure.
 */
export function loadSeconds(): number {
  return Number(process.env.BENCH_LOAD_SECONDS ?? 3);
}

/** Patients of each integrator: instances stop at 9,999, so a long or fast run moves on to the next patient. */
const PATIENTS_EACH = 5;
const LAST_INSTANCE = 9999;

export interface LoadWorld {
  study: BenchStudy;
  /** One key and a few patients of its own per integrator. */
  integrators: { key: string; patients: BenchPatient[] }[];
}

export async function loadWorld(knex: Knex, code: string): Promise<LoadWorld> {
  const study = await createStudy(knex, demoDesign(code));
  const keys = await makeKeys(knex, study, INTEGRATORS, 'Bench integrator');
  const patients = await seedPatients(knex, study, INTEGRATORS * PATIENTS_EACH, { sex: 'female', birthYear: 1970, enrolledOn: '2026-01-05' });
  return { study, integrators: keys.map((k, i) => ({ key: k.key, patients: patients.slice(i * PATIENTS_EACH, (i + 1) * PATIENTS_EACH) })) };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  errors: number;
  /**
   * CPU milliseconds per request of the processes under test, and of their PostgreSQL backends: on a
   * shared machine this says what a request costs even when other work steals the cores.
   */
  cpuPerRequest: { service: number; database: number };
}

/** CPU used so far by each process under test and by each PostgreSQL backend serving them. */
async function cpuSnapshot(knex: Knex | undefined, pids: number[]): Promise<{ service: number; backends: Map<number, number> }> {
  const backends = new Map<number, number>();
  if (knex) {
    // openDatabase names each process's connections sdx-<pid>-…
    const { rows } = await knex.raw<{ rows: { pid: number }[] }>(`select pid from pg_stat_activity where ${pids.map(() => 'application_name like ?').join(' or ')}`, pids.map((p) => `sdx-${p}-%`));
    for (const r of rows) backends.set(r.pid, cpuMs(r.pid));
  }
  return { service: pids.reduce((sum, pid) => sum + cpuMs(pid), 0), backends };
}

function databaseCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, end] of after) ms += end - (before.get(pid) ?? 0);
  return ms;
}

type Call = 'design' | 'records';

/**
 * How many unscheduled visits each integrator has sent: every small records call saves new form
 * instances (five vital signs, one in ten out of range), so the load keeps writing rather than skipping.
 */
const sent = new Map<string, number>();

function recordsBody(integrator: LoadWorld['integrators'][number]): string {
  const first = sent.get(integrator.key) ?? 0;
  sent.set(integrator.key, first + SMALL_CALL);
  const records = Array.from({ length: SMALL_CALL }, (_, i) => {
    const n = first + i;
    const patient = at(integrator.patients, Math.floor(n / LAST_INSTANCE) % PATIENTS_EACH, 'the integrator\'s patients');
    const instance = (n % LAST_INSTANCE) + 1;
    return {
      subject: patient.subject, visit: 'unscheduled', form: 'vs', instance,
      values: { vsdate: '2026-03-02', sbp: instance % 10 === 0 ? '235' : String(120 + (instance % 20)), dbp: '80', hr: '72' },
    };
  });
  return JSON.stringify({ records });
}

/**
 * One autocannon run: `connections` connections spread over `urls`, connection i sending as integrator
 * i (mod their number). `onStatus` sees every response's status with its integrator's index.
 */
export async function loadRun(options: {
  urls: string[];
  world: LoadWorld;
  call: Call | 'bare';
  connections?: number;
  seconds?: number;
  /** Bounded by count instead of time: requests in all (spread evenly over the connections). */
  amount?: number;
  onStatus?: (integrator: number, status: number) => void;
  /** The processes answering (for CPU per request), and the bench database to find their backends. */
  measure?: { pids: number[]; knex?: Knex };
}): Promise<LoadResult> {
  const { world } = options;
  const path = options.call === 'records' ? `/api/v1/studies/${world.study.code}/records` : `/api/v1/studies/${world.study.code}`;
  let nextClient = 0;
  const { value: result, cpuPerRequest } = await withCpu(options.measure, (r) => Math.max(1, r.requests.total), () => autocannon({
    // autocannon spreads the connections over several urls (its types declare only one)
    url: options.urls as unknown as string,
    connections: options.connections ?? INTEGRATORS,
    ...(options.amount ? { amount: options.amount } : { duration: options.seconds ?? loadSeconds() }),
    timeout: 20,
    setupClient: (client) => {
      const index = nextClient++ % world.integrators.length;
      const integrator = at(world.integrators, index, 'the integrators');
      const headers: Record<string, string> = { authorization: `Bearer ${integrator.key}` };
      if (options.call === 'records') headers['content-type'] = 'application/json';
      client.setRequests([{
        method: options.call === 'records' ? 'POST' : 'GET',
        path,
        headers,
        ...(options.call === 'records' ? { setupRequest: (request: autocannon.Request) => ({ ...request, body: recordsBody(integrator) }) } : {}),
        ...(options.onStatus ? { onResponse: (status: number) => options.onStatus!(index, status) } : {}),
      }]);
    },
  }));
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries((result as unknown as { statusCodeStats: Record<string, { count: number }> }).statusCodeStats ?? {})) statuses[code] = stat.count;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    statuses,
    errors: result.errors + result.timeouts,
    cpuPerRequest,
  };
}

/** Runs `run`, and the CPU per request it cost the processes under test and their PostgreSQL backends. */
async function withCpu<T>(measure: { pids: number[]; knex?: Knex } | undefined, requestsOf: (value: T) => number, run: () => Promise<T>): Promise<{ value: T; cpuPerRequest: LoadResult['cpuPerRequest'] }> {
  const pids = measure?.pids ?? [];
  const before = await cpuSnapshot(measure?.knex, pids);
  const value = await run();
  const after = await cpuSnapshot(measure?.knex, pids);
  // Backends that closed during the run are missed; the pool keeps its connections while it is busy.
  for (const [pid] of before.backends) if (!after.backends.has(pid)) after.backends.set(pid, before.backends.get(pid)!);
  const requests = requestsOf(value);
  return {
    value,
    cpuPerRequest: { service: (after.service - before.service) / requests, database: databaseCpuBetween(before.backends, after.backends) / requests },
  };
}

/**
 * The design call offered open-loop at a steady `rate` over all integrators: integrator i sends every
 * `integrators / rate` seconds, the integrators staggered evenly, each request on time whether or not
 * the one before it was answered. Latency counts from the moment a request was due, so a client that
 * falls behind shows as latency rather than hiding it. (autocannon's own rate option sends each
 * connection's quota for the second in one burst at the start of it, which measures bursts of 50
 * requests, not a steady rate.)
 */
export async function pacedRun(options: { url: string; world: LoadWorld; rate: number; seconds: number; measure?: { pids: number[]; knex?: Knex } }): Promise<LoadResult> {
  const { world, rate, seconds } = options;
  const url = `${options.url}/api/v1/studies/${world.study.code}`;
  const interval = (1000 * world.integrators.length) / rate;
  const { value: answers, cpuPerRequest } = await withCpu(options.measure, (a) => Math.max(1, a.length), async () => {
    const start = performance.now() + 50;
    const due: Promise<{ status: number | 'error'; ms: number }>[] = [];
    world.integrators.forEach((integrator, i) => {
      for (let at = start + (i * interval) / world.integrators.length; at < start + seconds * 1000; at += interval) {
        due.push(new Promise((resolve) => {
          setTimeout(() => {
            void fetch(url, { headers: { authorization: `Bearer ${integrator.key}` } })
              .then(async (response) => { await response.arrayBuffer(); return response.status; }, () => 'error' as const)
              .then((status) => resolve({ status, ms: performance.now() - at }));
          }, at - performance.now());
        }));
      }
    });
    return Promise.all(due);
  });
  const statuses: Record<string, number> = {};
  for (const a of answers) if (a.status !== 'error') statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  const latencies = answers.map((a) => a.ms).sort((a, b) => a - b);
  const percentile = (p: number) => Math.round(at(latencies, Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1), 'the latencies'));
  return {
    rps: answers.length / seconds,
    p50: percentile(50),
    p99: percentile(99),
    requests: answers.length,
    statuses,
    errors: answers.filter((a) => a.status === 'error').length,
    cpuPerRequest,
  };
}

/** Fails the bench when a load run got answers it should not have (a 429 in a run meant to stay under the limit, a 5xx). */
export function expectOnly(result: LoadResult, allowed: string[], what: string): void {
  const other = Object.entries(result.statuses).filter(([code]) => !allowed.includes(code));
  if (other.length > 0 || result.errors > 0) {
    throw new Error(`${what}: unexpected answers ${JSON.stringify(result.statuses)}, ${result.errors} errors or timeouts`);
  }
}

/** Logs one run's numbers in a line. */
export function describeRun(ctx: BenchContext, label: string, r: LoadResult): void {
  const cpu = `CPU per request ${r.cpuPerRequest.service.toFixed(2)} ms service + ${r.cpuPerRequest.database.toFixed(2)} ms database`;
  ctx.log(`${label}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${JSON.stringify(r.statuses)}, ${cpu}`);
}
