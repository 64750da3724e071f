import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { inTransaction } from '../../src/db/stores.js';
import { addSubscription, type ResolveHost } from '../../src/domain/webhooks/subscriptions.js';
import type { WebhookEventType } from '../../src/domain/webhooks/webhookEvents.js';
import { startWebhookDelivery, type WebhookDelivery } from '../../src/webhookDelivery.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { only } from '../helpers/only.js';
import { until } from '../helpers/serviceActivity.js';
import { assertWebhookMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { testConfig } from '../helpers/testDatabase.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhookReceiver.js';

const resolveNowhere: ResolveHost = () => Promise.resolve([]);

/** What an example receiver printed for one event it accepted. */
interface Printed { id: string; type: string; data: Record<string, unknown> }

/** An example receiver (examples/typescript/webhookReceiver.ts or examples/python/webhook_receiver.py) as a child process. */
interface ExampleReceiver { url: string; printed: Printed[]; refusals: string[]; stop(): void }

async function startExample(command: string, args: string[], secret: string, port: number): Promise<ExampleReceiver> {
  const child: ChildProcess = spawn(command, args, { env: { ...process.env, SDX_WEBHOOK_SECRET: secret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  const printed: Printed[] = [];
  const refusals: string[] = [];
  let listening = false;
  createInterface({ input: child.stdout! }).on('line', (line) => printed.push(JSON.parse(line) as Printed));
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith('listening on')) listening = true;
    if (line.startsWith('refused a delivery')) refusals.push(line);
  });
  await until(() => Promise.resolve(listening), `${args.at(-1)} listening`, 60_000);
  return { url: `http://127.0.0.1:${port}`, printed, refusals, stop: () => child.kill() };
}

/**
 * Issue 22.5 and 22.6, end to end: an API key's steps on a query reach a subscriber as signed events, and
 * the example receivers in TypeScript and Python accept the service's real deliveries and refuse forged ones.
 */
describe('webhooks of query steps, and the example receivers', function () {
  this.timeout(180_000);
  const { app, world } = useStudyWorld();
  let worker: WebhookDelivery;
  let receiver: WebhookReceiver;
  const base = () => `/api/v1/studies/${world.code}`;

  before(async () => {
    receiver = await startReceiver();
    worker = startWebhookDelivery(testConfig({ WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_POLL_MS: '200' }), app.db.knex);
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
  });

  async function subscribe(url: string, events: WebhookEventType[]): Promise<string> {
    const { secret } = await inTransaction(app.db.knex, (s) => addSubscription(s, operator, { study: world.code, url, events }, { allowInsecure: true }, resolveNowhere));
    return secret;
  }

  async function enrolWithVitals(sbp: string): Promise<string> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base()}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-03-01' } });
    expect(enrolled.status).to.equal(201);
    await giveConsent(app.db.knex, world.code, enrolled.body.subject, '2026-02-01');
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base()}/records`, {
      key: world.key, body: { records: [{ subject: enrolled.body.subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-02-14', sbp, dbp: '85', hr: '70' } }] },
    });
    expect(saved.status).to.equal(200);
    return enrolled.body.subject;
  }

  it('sends query.opened, query.answered and query.closed for a key\'s steps, signed, with ids and no text', async () => {
    const secret = await subscribe(`${receiver.url}/queries`, ['query.opened', 'query.answered', 'query.closed']);
    const subject = await enrolWithVitals('120');
    const raised = await app.call<AnswerOf<'openQuery', 201>>('POST', `${base()}/queries`, {
      key: world.key, body: { subject, visit: 'screening', form: 'vs', field: 'hr', message: 'Heart rate 70: was the patient at rest?' },
    });
    expect(raised.status).to.equal(201);
    const answered = await app.call<AnswerOf<'answerQuery', 201>>('POST', `${base()}/queries/${raised.body.id}/answers`, { key: world.key, body: { text: 'Yes, after 5 minutes seated.' } });
    expect(answered.status).to.equal(201);
    const closed = await app.call<AnswerOf<'closeQuery', 200>>('POST', `${base()}/queries/${raised.body.id}/close`, { key: world.key, body: { reason: 'Answered from the source.' } });
    expect(closed.status).to.equal(200);

    await until(() => Promise.resolve(receiver.received.length >= 3), 'three query events', 10_000);
    const events = receiver.received.map((r) => {
      const body = r.body as { type: string; data: Record<string, unknown> };
      expect(new Webhook(secret).verify(r.text, r.headers)).to.deep.equal(body);
      assertWebhookMatchesSpec(body);
      expect(r.text).not.to.match(/at rest|seated|from the source/);
      return body;
    });
    const where = { study: world.code, subject, site: '01', visit: 'screening', instance: 1, form: 'vs', fields: ['hr'], query_id: raised.body.id };
    expect(events.map((e) => [e.type, e.data])).to.deep.equal([['query.opened', where], ['query.answered', where], ['query.closed', where]]);
  });

  for (const example of [
    { name: 'TypeScript', command: process.execPath, args: ['--import', 'tsx', 'examples/typescript/webhookReceiver.ts'], port: 39_451 },
    { name: 'Python', command: 'python3', args: ['examples/python/webhook_receiver.py'], port: 39_452 },
  ]) {
    it(`the ${example.name} example receiver accepts the service's signed deliveries and refuses a forged one`, async () => {
      const url = `http://127.0.0.1:${example.port}/sdx`;
      const secret = await subscribe(url, ['patient.enrolled']);
      const receiving = await startExample(example.command, example.args, secret, example.port);
      try {
        const subject = await enrolWithVitals('120');
        await until(() => Promise.resolve(receiving.printed.some((p) => p.data.subject === subject)), `${example.name} receiver printing ${subject}`, 10_000);
        const event = only(receiving.printed.filter((p) => p.data.subject === subject), 'the enrolment event');
        expect(event).to.deep.include({ type: 'patient.enrolled', data: { study: world.code, subject, site: '01' } });
        expect(event.id).to.match(/^evt_\d+$/);

        const body = JSON.stringify({ type: 'patient.enrolled', timestamp: new Date().toISOString(), data: { study: world.code, subject: '01-999', site: '01' } });
        const timestamp = String(Math.floor(Date.now() / 1000));
        const forged = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'webhook-id': 'evt_999999', 'webhook-timestamp': timestamp, 'webhook-signature': 'v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' } });
        expect(forged.status).to.equal(400);
        const signedRight = new Webhook(secret).sign('evt_999998', new Date(), body);
        const genuine = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'webhook-id': 'evt_999998', 'webhook-timestamp': timestamp, 'webhook-signature': signedRight } });
        expect(genuine.status).to.equal(204);
        // Delivered twice (at least once), handled once.
        const again = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'webhook-id': 'evt_999998', 'webhook-timestamp': timestamp, 'webhook-signature': signedRight } });
        expect(again.status).to.equal(204);
        await until(() => Promise.resolve(receiving.refusals.length === 1), 'the forged delivery refused', 5_000);
        expect(receiving.printed.filter((p) => p.data.subject === '01-999')).to.have.lengthOf(1);
      } finally {
        receiving.stop();
      }
    });
  }
});
