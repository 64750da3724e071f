import { expect } from 'chai';
import type { Knex } from 'knex';
import { Webhook } from 'standardwebhooks';
import { inTransaction } from '../../src/db/stores.js';
import type { Actor } from '../../src/domain/actor.js';
import { enrolPatient } from '../../src/domain/patients/enrolPatient.js';
import { grantRole, revokeRole } from '../../src/domain/people/roles.js';
import type { WebhookEventData } from '../../src/domain/stores.js';
import { addSubscription, type ResolveHost } from '../../src/domain/webhooks/subscriptions.js';
import type { WebhookEventType } from '../../src/domain/webhooks/webhookEvents.js';
import { sendWebhook } from '../../src/webhookSender.js';
import { startWebhookDelivery, type WebhookDelivery } from '../../src/webhookDelivery.js';
import { addPerson, createStudyWorld, giveConsent, operator, type StudyWorld } from '../helpers/factories.js';
import { unscheduledVisitsBody } from '../helpers/recordBodies.js';
import { sdx } from '../helpers/sdxCli.js';
import { until } from '../helpers/serviceActivity.js';
import { startServiceProcess } from '../helpers/serviceProcess.js';
import { at, present } from '../helpers/only.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { assertWebhookMatchesSpec } from '../helpers/specValidation.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase, testConfig } from '../helpers/testDatabase.js';
import { startReceiver, type Received, type WebhookReceiver } from '../helpers/webhookReceiver.js';

const INSECURE = { allowInsecure: true };
const SECURE = { allowInsecure: false };
const resolveNowhere: ResolveHost = () => Promise.resolve([]);

/** The event id a delivery carries in `webhook-id` (`evt_<n>`). */
const eventIdOf = (r: Received) => Number(present(r.headers['webhook-id'], 'the webhook-id header').slice('evt_'.length));

/** What `sdx webhook add` prints: the subscription, with its secret shown this once. */
interface AddedSubscription { id: number; secret: string }

/** The delivery log's line of an event on the study's API page, as text without tags. */
function logLine(html: string, eventId: number): string {
  const log = present(/<table class="grid" id="deliveries">([\s\S]*?)<\/table>/.exec(html)?.[1], 'the delivery log');
  const line = present(log.split('<tr').find((row) => row.includes(`evt_${eventId}</code>`)), `the line of evt_${eventId}`);
  return line.replace(/<[^>]+>/g, ' ').replace(/&#39;/g, "'").replace(/\s+/g, ' ').trim();
}

/** A count(*) row as the pg driver returns it. */
type CountRow = { n: string | number };
const countOf = (rows: readonly CountRow[]) => Number(at(rows, 0, 'the count rows').n);

describe('webhooks', function () {
  this.timeout(180_000);
  let app: TestApp;
  let world: StudyWorld;
  let knex: Knex;
  let receiver: WebhookReceiver;
  let worker: WebhookDelivery | undefined;
  let answer: (r: Received) => number | Promise<number>;
  let patientNo = 0;

  before(async () => {
    // Managers subscribe the tests' receiver, on the loopback interface, on the portal's API page too.
    app = await startTestApp({ WEBHOOKS_ALLOW_INSECURE: '1' });
    knex = app.db.knex;
    receiver = await startReceiver((r) => answer(r));
  });
  after(async () => {
    await worker?.stop();
    await receiver.close();
    await app.close();
  });
  beforeEach(async () => {
    await worker?.stop();
    worker = undefined;
    answer = () => 200;
    receiver.received.length = 0;
    await resetDatabase(knex);
    world = await createStudyWorld(knex);
  });

  const startWorker = () => {
    worker = startWebhookDelivery(testConfig({ WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_POLL_MS: '200' }), knex);
  };

  async function subscribe(path: string, events: WebhookEventType[]): Promise<{ id: number; secret: string }> {
    const { subscription, secret } = await inTransaction(knex, (s) => addSubscription(s, operator, { study: world.code, url: `${receiver.url}${path}`, events }, INSECURE, resolveNowhere));
    return { id: subscription.id, secret };
  }

  /** A subscription made by a person on the study's API page, acting as themselves. */
  async function subscribeAs(email: string, path: string, events: WebhookEventType[]): Promise<number> {
    const user = present(await inTransaction(knex, (s) => s.people.findUserByEmail(email)), email);
    const actor: Actor = { kind: 'user', userId: user.id, name: user.name, via: 'portal' };
    const { subscription } = await inTransaction(knex, (s) => addSubscription(s, actor, { study: world.code, url: `${receiver.url}${path}`, events }, INSECURE, resolveNowhere));
    return subscription.id;
  }

  /** A manager signed in to the portal, on the study's API page. */
  async function managerOnApiPage(email: string, role: { sites?: string[]; unblinded?: boolean } = {}): Promise<PortalClient> {
    await addStaff(knex, email, { study: world.code, role: 'manager', canExport: true, ...role });
    const portal = new PortalClient(app.baseUrl);
    expect((await portal.signIn(email, STAFF_PASSWORD)).status).to.equal(303);
    expect((await portal.get(`/p/${world.code}/api`)).status).to.equal(200);
    return portal;
  }

  /** A subscription a manager makes on the study's API page; returns its id. */
  async function subscribeOnApiPage(portal: PortalClient, path: string, events: WebhookEventType[]): Promise<number> {
    const url = `${receiver.url}${path}`;
    expect((await portal.post(`/p/${world.code}/api/webhooks`, { url, events })).status).to.equal(201);
    return present(await knex('webhook_subscriptions').where({ url }).first<{ id: number } | undefined>('id'), url).id;
  }

  /** Waits until no delivery of the subscription waits any more: each was delivered, or withheld. */
  const settled = (subscriptionId: number) => until(async () => countOf(await knex('webhook_deliveries').where({ subscription_id: subscriptionId })
    .whereNull('delivered_at').whereNull('withheld_at').count<CountRow[]>({ n: '*' })) === 0, `the deliveries of subscription ${subscriptionId}`);

  /** The events written for a subscription, oldest first (the outbox, before any worker sends them). */
  const queuedFor = async (subscriptionId: number) => knex('webhook_deliveries as d').join('webhook_events as e', 'e.id', 'd.event_id')
    .where('d.subscription_id', subscriptionId).orderBy('d.event_id').select<{ type: WebhookEventType; data: WebhookEventData }[]>('e.type', 'e.data');

  async function enrol(site = '01'): Promise<string> {
    const subject = `${site}-W${String(++patientNo).padStart(4, '0')}`;
    const res = await app.call('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-10', subject },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(knex, world.code, subject);
    return subject;
  }

  const vitals = (subject: string, instance: number, values: Record<string, string> = { vsdate: '2026-02-01', sbp: '121', dbp: '79', hr: '67' }) =>
    ({ subject, visit: 'unscheduled', form: 'vs', instance, values });

  const arrived = (path: string, count: number, ms = 10_000) => until(() => Promise.resolve(receiver.received.filter((r) => r.path === path).length >= count), `${count} webhooks at ${path}`, ms);

  it('sends patient.enrolled and record.saved to a local receiver within 2 s, signed so that standardwebhooks verifies them, naming codes but no value', async () => {
    startWorker();
    const { secret } = await subscribe('/hook', ['patient.enrolled', 'record.saved']);
    // Each event arrives within 2 s of the answer to the call that committed it.
    const subject = await enrol();
    await arrived('/hook', 1, 2_000);
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: [vitals(subject, 1)] } });
    expect(res.status).to.equal(200);
    expect(at(res.body.results, 0).status).to.equal('ok');
    await arrived('/hook', 2, 2_000);

    const enrolled = at(receiver.received, 0);
    const saved = at(receiver.received, 1);
    for (const r of [enrolled, saved]) {
      // Throws on a wrong signature, id or timestamp.
      expect(new Webhook(secret).verify(r.text, r.headers)).to.deep.equal(r.body);
      expect(r.headers['content-type']).to.equal('application/json');
      assertWebhookMatchesSpec(r.body);
    }
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(saved.text, saved.headers)).to.throw();
    expect(enrolled.body).to.deep.include({ type: 'patient.enrolled', data: { study: 'DEMO', subject, site: '01' } });
    expect(saved.body).to.deep.include({
      type: 'record.saved', data: { study: 'DEMO', subject, site: '01', visit: 'unscheduled', instance: 1, form: 'vs', fields: ['dbp', 'hr', 'sbp', 'vsdate'] },
    });
    // No value, and no private attribute of the patient, travels in any body.
    // (The bodies hold nothing but type, timestamp and data: the spec's schemas allow no other member.)
    const data = JSON.stringify([saved.body.data, enrolled.body.data]);
    for (const secretText of ['121', '79', '67', '2026-02-01', '1960', 'female']) expect(data).not.to.include(secretText);
    expect(eventIdOf(saved)).to.be.above(eventIdOf(enrolled));
  });

  it('writes no event for a change that was rolled back, nor for a records call refused whole', async () => {
    await subscribe('/hook', ['patient.enrolled', 'record.saved']);
    const subject = await enrol();
    const events = async () => countOf(await knex('webhook_events').count<CountRow[]>({ n: '*' }));
    expect(await events()).to.equal(1);
    // The enrolment use case publishes its event, then its transaction fails: the event goes with it.
    const rolledBack = inTransaction(knex, async (s) => {
      const study = (await s.studies.findByCode(world.code))!;
      const key = (await s.apiKeys.findById(study.id, world.keyId))!;
      const context = {
        keyId: key.id, keyName: key.name, studyId: study.id, studyCode: study.code, canRead: true, canWrite: true, canEnrol: true,
        siteIds: key.siteIds, makerId: key.createdBy, makerName: key.makerName, makerUnblinded: true,
      };
      await enrolPatient(s, operator, context, study, {
        site: '01', sex: 'male', birth_year: 1970, enrolled_on: '2026-01-10', subject: '01-ROLLBACK',
      });
      expect(Number((await s.webhooks.deliveries(study.id, undefined, 10)).length)).to.equal(2);
      throw new Error('the change fails after its event was written');
    });
    await rolledBack.then(() => expect.fail('the transaction should have failed'), (error: Error) => expect(error.message).to.include('fails after'));
    const refused = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: [vitals(subject, 1), { ...vitals(subject, 2), visit: 'nowhere' }] } });
    expect(refused.status).to.equal(422);
    expect(refused.body.code).to.equal('unknown_form_or_visit');
    expect(await events()).to.equal(1);
    startWorker();
    await arrived('/hook', 1);
    await new Promise((r) => setTimeout(r, 600));
    expect(receiver.received.map((r) => r.body.data.subject)).to.deep.equal([subject]);
  });

  it('retries an event its receiver refused, with the same id, before any later event, and logs each attempt', async () => {
    const { id } = await subscribe('/flaky', ['patient.enrolled']);
    let refusedOnce = false;
    answer = () => {
      if (refusedOnce) return 200;
      refusedOnce = true;
      return 500;
    };
    startWorker();
    const first = await enrol();
    await arrived('/flaky', 1);
    const second = await enrol();
    const third = await enrol();
    await arrived('/flaky', 4, 15_000);
    const seen = receiver.received.map((r) => [r.headers['webhook-id'], r.body.data.subject]);
    expect(seen.map(([, subject]) => subject)).to.deep.equal([first, first, second, third]);
    expect(at(seen, 0)[0]).to.equal(at(seen, 1)[0]);
    // The retry waited for the backoff (5 s less the jitter), and the later events waited for it.
    expect(at(receiver.received, 1).at - at(receiver.received, 0).at).to.be.at.least(4_000);
    const log = await sdx<{ deliveries: { type: string; status: string; attempts: number; http_status: number | null }[] }>('webhook', 'deliveries', world.code, String(id));
    expect(log.deliveries.map((d) => [d.type, d.status, d.attempts, d.http_status])).to.deep.equal([
      ['patient.enrolled', 'delivered', 1, 200], ['patient.enrolled', 'delivered', 1, 200], ['patient.enrolled', 'delivered', 2, 200],
    ]);
  });

  it('delivers each subscription its own events in the order they were committed', async () => {
    await subscribe('/a', ['record.saved', 'query.opened']);
    await subscribe('/b', ['record.saved']);
    const subject = await enrol();
    // sbp 232 is above its range: the record opens an automatic query, sent after the record's event.
    const records = Array.from({ length: 30 }, (_, i) => vitals(subject, i + 1, { vsdate: '2026-02-01', sbp: i % 10 === 0 ? '232' : '120', dbp: '80', hr: '60' }));
    for (let i = 0; i < records.length; i += 10) {
      const res = await app.call('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: records.slice(i, i + 10) } });
      expect(res.status).to.equal(200);
    }
    startWorker();
    await arrived('/a', 33);
    await arrived('/b', 30);
    const at = (path: string) => receiver.received.filter((r) => r.path === path);
    for (const path of ['/a', '/b']) {
      const ids = at(path).map(eventIdOf);
      expect(ids).to.deep.equal([...ids].sort((x, y) => x - y));
      expect(new Set(ids).size).to.equal(ids.length);
    }
    expect(at('/b').map((r) => r.body.data.instance)).to.deep.equal(records.map((r) => r.instance));
    expect(at('/a').filter((r) => r.body.type === 'query.opened').map((r) => [r.body.data.instance, r.body.data.fields])).to.deep.equal([[1, ['sbp']], [11, ['sbp']], [21, ['sbp']]]);
  });

  it('sends a subscription made by a manager of some sites only the events about patients of the sites the role covers when each is written', async () => {
    await addPerson(knex, world.code, 'site01-manager@sdx.test', { role: 'manager', canExport: true, sites: ['01'] });
    const id = await subscribeAs('site01-manager@sdx.test', '/sites', ['patient.enrolled', 'record.saved']);
    const atSiteOne = await enrol('01');
    const atSiteTwo = await enrol('02');
    const saved = await app.call('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: [vitals(atSiteOne, 1), vitals(atSiteTwo, 1)] } });
    expect(saved.status).to.equal(200);
    expect((await queuedFor(id)).map((e) => [e.type, e.data.subject])).to.deep.equal([['patient.enrolled', atSiteOne], ['record.saved', atSiteOne]]);
    // The role now covers every site: the next site-02 event goes to the same subscription.
    await inTransaction(knex, (s) => grantRole(s, operator, { study: world.code, email: 'site01-manager@sdx.test', role: 'manager', canExport: true, unblinded: false }));
    const later = await enrol('02');
    expect((await queuedFor(id)).map((e) => e.data.subject)).to.deep.equal([atSiteOne, atSiteOne, later]);
  });

  it('sends nothing more to a subscription whose maker no longer manages the study', async () => {
    await addPerson(knex, world.code, 'leaving-manager@sdx.test', { role: 'manager', canExport: true });
    const id = await subscribeAs('leaving-manager@sdx.test', '/left', ['patient.enrolled']);
    const before = await enrol();
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: world.code, email: 'leaving-manager@sdx.test', role: 'manager' }));
    await enrol();
    expect((await queuedFor(id)).map((e) => e.data.subject)).to.deep.equal([before]);
  });

  it('sends events about a form of the unblinded team to a subscription made unblinded only while its maker is still unblinded', async () => {
    await addPerson(knex, world.code, 'unblinded-manager@sdx.test', { role: 'manager', canExport: true, unblinded: true });
    const id = await subscribeAs('unblinded-manager@sdx.test', '/unblinded', ['record.saved']);
    const allocate = async () => {
      const subject = await enrol();
      const res = await app.call('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'baseline', form: 'ip_alloc', values: { kit: `K-${subject}`, arm: 'A' } }, vitals(subject, 1)] },
      });
      expect(res.status).to.equal(200);
      return subject;
    };
    const whileUnblinded = await allocate();
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: world.code, email: 'unblinded-manager@sdx.test', unblinded: true }));
    const onceBlinded = await allocate();
    expect((await queuedFor(id)).map((e) => [e.data.subject, e.data.form])).to.deep.equal([
      [whileUnblinded, 'ip_alloc'], [whileUnblinded, 'vs'], [onceBlinded, 'vs'],
    ]);
  });

  // An event waiting for its receiver is judged again when it is sent, by the rule that chose its receivers:
  // the receiver is down, the event waits for its retry, the maker's role changes, the receiver comes back.
  it('withholds a waiting event once the subscription\'s maker no longer manages the study: it is never sent, and the log says why', async () => {
    const leaving = await managerOnApiPage('leaving-manager@sdx.test');
    const id = await subscribeOnApiPage(leaving, '/leaving', ['patient.enrolled']);
    answer = () => 503;
    startWorker();
    const subject = await enrol('02');
    await arrived('/leaving', 1);
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: world.code, email: 'leaving-manager@sdx.test', role: 'manager' }));
    answer = () => 200;
    await settled(id);
    // Only the attempt made while the maker still managed the study reached the receiver.
    expect(receiver.received.map((r) => [r.path, r.body.data.subject])).to.deep.equal([['/leaving', subject]]);
    const staying = await managerOnApiPage('staying-manager@sdx.test');
    const page = await staying.get(`/p/${world.code}/api`);
    expect(logLine(page.html, eventIdOf(at(receiver.received, 0))))
      .to.include('patient.enrolled').and.include('withheld, never sent: the subscription\'s creator no longer manages the study (HTTP 503)');
  });

  it('withholds a waiting event about a site the maker\'s role no longer covers, and sends the subscription\'s next event after it', async () => {
    const moving = await managerOnApiPage('moving-manager@sdx.test', { sites: ['01', '02'] });
    const id = await subscribeOnApiPage(moving, '/moving', ['patient.enrolled']);
    answer = () => 503;
    startWorker();
    const atTwo = await enrol('02');
    await arrived('/moving', 1);
    // Queued behind the failing event.
    const atOne = await enrol('01');
    await inTransaction(knex, (s) => grantRole(s, operator, { study: world.code, email: 'moving-manager@sdx.test', role: 'manager', canExport: true, unblinded: false, sites: ['01'] }));
    answer = () => 200;
    await settled(id);
    expect(receiver.received.map((r) => [r.body.data.subject, r.body.data.site])).to.deep.equal([[atTwo, '02'], [atOne, '01']]);
    for (const r of receiver.received) assertWebhookMatchesSpec(r.body);
    const page = await moving.get(`/p/${world.code}/api`);
    expect(logLine(page.html, eventIdOf(at(receiver.received, 0)))).to.include('withheld, never sent: the creator\'s manager role no longer covers the patient\'s site');
    expect(logLine(page.html, eventIdOf(at(receiver.received, 1)))).to.include('delivered (HTTP 200)');
  });

  it('withholds a waiting event about a form of the unblinded team once the maker is blinded, and sends the subscription\'s next event after it', async () => {
    const unblinded = await managerOnApiPage('blinded-later@sdx.test', { unblinded: true });
    const id = await subscribeOnApiPage(unblinded, '/blinded-later', ['record.saved']);
    const subject = await enrol();
    answer = () => 503;
    startWorker();
    const res = await app.call('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'baseline', form: 'ip_alloc', values: { kit: `K-${subject}`, arm: 'A' } }, vitals(subject, 1)] },
    });
    expect(res.status).to.equal(200);
    await arrived('/blinded-later', 1);
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: world.code, email: 'blinded-later@sdx.test', unblinded: true }));
    answer = () => 200;
    await settled(id);
    expect(receiver.received.map((r) => r.body.data.form)).to.deep.equal(['ip_alloc', 'vs']);
    const log = await sdx<{ deliveries: { type: string; status: string; withheld_reason: string | null; next_attempt_at: string | null }[] }>('webhook', 'deliveries', world.code, String(id));
    expect(log.deliveries.map((d) => [d.type, d.status, d.withheld_reason, d.next_attempt_at])).to.deep.equal([
      ['record.saved', 'delivered', null, null], ['record.saved', 'withheld', 'creator_blinded', null],
    ]);
  });

  it('refuses addresses outside the policy when subscribing, and at delivery on the resolved address', async () => {
    const refusal = async (url: string, resolve = resolveNowhere) => inTransaction(knex, (s) => addSubscription(s, operator, { study: world.code, url, events: ['record.saved'] }, SECURE, resolve))
      .then(() => 'accepted', (error: { code: string; fieldErrors: { params: { variant: string } }[] }) => `${error.code}/${error.fieldErrors[0]?.params.variant}`);
    expect(await refusal('http://example.org/hook')).to.equal('webhook_url_refused/not_https');
    expect(await refusal('https://127.0.0.1/hook')).to.equal('webhook_url_refused/not_public');
    expect(await refusal('https://[::1]/hook')).to.equal('webhook_url_refused/not_public');
    expect(await refusal('https://10.1.2.3/hook')).to.equal('webhook_url_refused/not_public');
    expect(await refusal('https://[::ffff:192.168.1.1]/hook')).to.equal('webhook_url_refused/not_public');
    expect(await refusal('https://user:pw@example.org/hook')).to.equal('webhook_url_refused/credentials');
    expect(await refusal('not a url')).to.equal('webhook_url_refused/not_a_url');
    expect(await refusal('https://hooks.example.org/x', () => Promise.resolve(['93.184.215.14', '192.168.0.7']))).to.equal('webhook_url_refused/not_public');
    expect(await refusal('https://hooks.example.org/x', () => Promise.resolve(['93.184.215.14']))).to.equal('accepted');
    const events = await inTransaction(knex, (s) => addSubscription(s, operator, { study: world.code, url: 'https://hooks.example.org/y', events: ['record.sent'] }, SECURE, resolveNowhere))
      .catch((error: { code: string }) => error.code);
    expect(events).to.equal('webhook_events_invalid');

    // A name that resolves to the loopback interface when the POST is made reaches nothing.
    const event = { eventId: 1, type: 'patient.enrolled', createdAt: new Date(), data: { study: 'DEMO', subject: '01-001', site: '01' } };
    const port = new URL(receiver.url).port;
    expect(await sendWebhook({ url: `https://localhost:${port}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, event, { policy: SECURE, timeoutMs: 2_000 }))
      .to.deep.equal({ ok: false, status: null, error: 'WEBHOOK_ADDRESS_REFUSED' });
    expect(await sendWebhook({ url: `${receiver.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, event, { policy: SECURE, timeoutMs: 2_000 }))
      .to.deep.equal({ ok: false, status: null, error: 'address refused: not_https' });
    expect(receiver.received).to.have.length(0);
  });

  it('manages subscriptions with sdx webhook: add shows the secret once, list, deliveries, remove', async () => {
    process.env.WEBHOOKS_ALLOW_INSECURE = '1';
    try {
      const added = await sdx<AddedSubscription>('webhook', 'add', world.code, '--url', `${receiver.url}/cli`, '--events', 'patient.enrolled,consent.withdrawn');
      expect(added).to.deep.include({ study: world.code, url: `${receiver.url}/cli`, events: ['patient.enrolled', 'consent.withdrawn'], state: 'active', unblinded: false });
      expect(added.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const listed = await sdx<{ subscriptions: unknown[] }>('webhook', 'list', world.code);
      expect(listed.subscriptions).to.have.length(1);
      expect(JSON.stringify(listed)).not.to.include(added.secret);
      const refused = await sdx<{ error: { code: string } }>('webhook', 'remove', world.code, '999');
      expect(refused.error.code).to.equal('webhook_not_found');
      expect(await sdx('webhook', 'remove', world.code, String(added.id))).to.deep.equal({ study: world.code, id: added.id, state: 'removed' });
      expect((await sdx<{ subscriptions: unknown[] }>('webhook', 'list', world.code)).subscriptions).to.deep.equal([]);
      // A removed subscription is owed nothing more.
      await enrol();
      expect(countOf(await knex('webhook_deliveries').count<CountRow[]>({ n: '*' }))).to.equal(0);
    } finally {
      delete process.env.WEBHOOKS_ALLOW_INSECURE;
    }
  });

  it('loses no event when the service process is killed with SIGKILL while 1,000 are pending: a second process delivers the rest, in order', async () => {
    await subscribe('/k1', ['record.saved']);
    await subscribe('/k2', ['record.saved']);
    const subjects = [await enrol('01'), await enrol('02')];
    for (let i = 0; i < 2; i++) {
      const res = await app.call('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: unscheduledVisitsBody(subjects, 500) });
      expect(res.status).to.equal(200);
    }
    // Instances continue across the two calls only as far as new ones go: count what was saved.
    const pending = countOf(await knex('webhook_deliveries').whereNull('delivered_at').count<CountRow[]>({ n: '*' }));
    expect(pending).to.be.at.least(1_000);
    answer = async () => { await new Promise((r) => setTimeout(r, 2)); return 200; };
    const env = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_POLL_MS: '200' };
    const first = await startServiceProcess(env);
    await until(() => Promise.resolve(receiver.received.length >= 200), 'the first process to deliver some events');
    first.kill('SIGKILL');
    await first.exited;
    const beforeSecond = receiver.received.length;
    expect(beforeSecond).to.be.below(pending);
    const second = await startServiceProcess(env);
    try {
      await until(async () => countOf(await knex('webhook_deliveries').whereNull('delivered_at').count<CountRow[]>({ n: '*' })) === 0, 'every delivery', 120_000);
    } finally {
      await second.stop();
    }
    const owed = await knex('webhook_deliveries as d').join('webhook_subscriptions as s', 's.id', 'd.subscription_id').orderBy('d.event_id').select<{ url: string; event_id: string | number }[]>('s.url', 'd.event_id');
    for (const path of ['/k1', '/k2']) {
      const expected = owed.filter((d) => d.url.endsWith(path)).map((d) => Number(d.event_id));
      const got = receiver.received.filter((r) => r.path === path).map(eventIdOf);
      // At least once: every event arrived, and the first arrival of each came in event order.
      const firstArrivals = got.filter((id, i) => got.indexOf(id) === i);
      expect(firstArrivals).to.deep.equal(expected);
    }
  });
});
