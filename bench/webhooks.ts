/**
 * Scenario "webhooks": the signed-webhook delivery of one service process to a receiver on 127.0.0.1.
 * Lag: records calls of one record each at 100 a second for BENCH_WEBHOOK_SECONDS (default 5); for each
 * `record.saved` event, the time from its transaction (the body's `timestamp`, the transaction's start,
 * so a little before the commit: the figure errs high) to its receipt. Target: p99 < 1 s.
 * Throughput: a backlog of 2,000 events written while the subscription is failing, then re-enabled;
 * events delivered per second until the last one arrives (one subscription, so one event at a time, in order).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createStores, inTransaction } from '../src/db/stores.js';
import { addSubscription } from '../src/domain/webhooks/subscriptions.js';
import type { BenchContext } from './lib/context.js';
import { at, only } from '../test/helpers/only.js';
import { expectStatus, request } from './lib/http.js';
import { summarise, valueBelow, type ScenarioResult } from './lib/results.js';
import { percentile, round } from './lib/stats.js';
import { createStudy, demoDesign, makeKeys, seedPatients } from './lib/world.js';

const RATE = 100;
const BACKLOG_CALLS = 4;
const operator = { kind: 'operator', name: 'bench' } as const;

function vitals(subject: string, instance: number) {
  return { subject, visit: 'unscheduled', form: 'vs', instance, values: { vsdate: '2026-02-01', sbp: '120', dbp: '80', hr: '60' } };
}

export async function webhooks(ctx: BenchContext): Promise<ScenarioResult[]> {
  const { knex } = ctx.db;
  const study = await createStudy(knex, demoDesign('WEBHOOKS'));
  const { key } = only(await makeKeys(knex, study, 1, 'Bench webhooks'), 'the keys');
  const patients = await seedPatients(knex, study, 20, { sex: 'female', birthYear: 1960, enrolledOn: '2026-01-10' });

  interface EventBody { type: string; timestamp: string }
  const arrivals: { at: number; body: EventBody }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrivals.push({ at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as EventBody });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/bench`;
  const { subscription } = await inTransaction(knex, (s) => addSubscription(s, operator, { study: study.code, url, events: ['record.saved'] }, { allowInsecure: true }, () => Promise.resolve([])));

  // The receiver is on the loopback interface: only this service process may send there.
  process.env.WEBHOOKS_ALLOW_INSECURE = '1';
  const service = await ctx.service('webhooks').finally(() => { delete process.env.WEBHOOKS_ALLOW_INSECURE; });
  const recordsUrl = `${service.url}/api/v1/studies/${study.code}/records`;
  let instance = 0;
  const send = async (records: unknown[]) => expectStatus(await request('POST', recordsUrl, { key, body: JSON.stringify({ records }) }), 200, 'records call');
  const waitFor = async (count: number) => {
    const deadline = Date.now() + 120_000;
    while (arrivals.length < count) {
      if (Date.now() > deadline) throw new Error(`webhooks: ${arrivals.length} of ${count} events arrived`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  try {
    const seconds = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 5);
    ctx.log(`webhooks: ${RATE} records a second for ${seconds} s, one record per call`);
    const calls: Promise<void>[] = [];
    const start = Date.now();
    for (let i = 0; i < RATE * seconds; i++) {
      const due = start + (i * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const patient = at(patients, i % patients.length, 'the patients');
      calls.push(send([vitals(patient.subject, Math.floor(i / patients.length) + 1)]));
    }
    await Promise.all(calls);
    instance = Math.ceil((RATE * seconds) / patients.length);
    await waitFor(RATE * seconds);
    const lags = arrivals.map((a) => a.at - Date.parse(a.body.timestamp));

    ctx.log(`webhooks: a backlog of ${BACKLOG_CALLS * 500} events, then the subscription re-enabled`);
    await knex('webhook_subscriptions').where({ id: subscription.id }).update({ state: 'failing' });
    for (let c = 0; c < BACKLOG_CALLS; c++) {
      const first = instance + 1;
      instance += 25;
      await send(patients.flatMap((p) => Array.from({ length: 25 }, (_, j) => vitals(p.subject, first + j))));
    }
    const before = arrivals.length;
    const enabledAt = Date.now();
    await createStores(knex).webhooks.setState(subscription.id, 'active');
    await waitFor(before + BACKLOG_CALLS * 500);
    const perSecond = (BACKLOG_CALLS * 500) / ((Date.now() - enabledAt) / 1000);

    return [
      summarise({
        scenario: 'webhook_lag_p99',
        title: `webhooks: delivery lag p99, commit to receipt, at ${RATE} records a second`,
        unit: 'ms',
        runs: [percentile(lags, 0.99)],
        goal: valueBelow(1000, 'ms'),
        details: { events: lags.length, median_ms: round(percentile(lags, 0.5)), max_ms: Math.max(...lags) },
      }),
      summarise({
        scenario: 'webhook_throughput',
        title: 'webhooks: events delivered per second, one subscription, a backlog of 2,000',
        unit: 'events/s',
        runs: [perSecond],
      }),
    ];
  } finally {
    await service.stop();
    await new Promise((resolve) => receiver.close(resolve));
  }
}
