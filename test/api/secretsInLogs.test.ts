import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { generateKeyValue } from '../../src/domain/apiKeys/keyValue.js';
import { createStudyWorld, demoDesign, giveConsent, makeKey } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { assertMatchesSpec, operationOf } from '../helpers/specValidation.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

/**
 * Secrets never appear in the logs (issue 10, item 7; SECURITY.md, "Logs"). The service runs as an
 * OS process of its own, with its access log on, and everything it prints on stdout and stderr is
 * kept. A whole scenario goes through it: every API operation with working keys and with wrong,
 * mistyped, revoked and misplaced ones, sign-in to the portal with a wrong and a right password, the
 * session's pages and forms, a key made in the portal, a FHIR import confirmed on its review page.
 * The output is then scanned for every key value, its secret part and fingerprint, the passwords,
 * the session ids and the CSRF tokens. It must also show one line per request, or the scan would
 * prove nothing.
 */

const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');
const WRONG_PASSWORD = 'Tr0ub4dor&3-not-it';

/** What the access log must say about one request; `who` null where it is not checked. */
interface Expected { method: string; path: string; status: number; who: { key_id?: number; user_id?: number } | null }

/** One line of the access log, as the tests below read it. */
interface AccessLine { level: string; at: string; request_id?: string; method: string; path: string; query: string[]; status: number; ms: number; key_id?: number; user_id?: number }

/** The path as the log must show it: no query string, and a key-shaped value cut short. */
const logged = (path: string) => at(path.split('?'), 0).replace(/sdx_[0-9A-Za-z]+/, 'sdx_…');

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The ways a secret could show up in a log: as it is, URL-encoded, and its SHA-256 in the usual encodings. */
function forms(value: string): string[] {
  const hash = sha256(value);
  return [value, encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2), hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')];
}

describe('secrets in the logs of a service process (a full scenario, then a scan)', function () {
  // Starting the service process compiles the whole service once more: slow on a busy machine.
  this.timeout(180_000);
  let service: ServiceProcess;
  let log = '';
  const expected: Expected[] = [];
  /** Label → secret value. */
  const secrets = new Map<string, string>();

  /** An API call to the service process, its answer checked against the spec like every answer of the suite. */
  async function api<Body = unknown>(method: string, path: string, options: { key?: string; authorization?: string; body?: unknown; raw?: string | Buffer; contentType?: string; keyId?: number } = {}) {
    const headers: Record<string, string> = {};
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    if (options.authorization) headers.authorization = options.authorization;
    const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const response = await fetch(`${service.baseUrl}${path}`, { method, headers, body: body as BodyInit | undefined });
    const text = await response.text();
    const contentType = response.headers.get('content-type') ?? '';
    const parsed: unknown = contentType.includes('json') && text ? JSON.parse(text) : text;
    const pathOnly = at(path.split('?'), 0);
    await assertMatchesSpec(await operationOf(method, pathOnly), response.status, contentType, parsed);
    expected.push({ method, path: logged(path), status: response.status, who: options.keyId ? { key_id: options.keyId } : {} });
    // The body has just been checked against the operation's answer in the contract.
    return { status: response.status, body: parsed as Body };
  }

  /** A portal request; every cookie and CSRF token the browser holds afterwards joins the secrets. */
  async function portal(client: PortalClient, method: 'GET' | 'POST', path: string, who: Expected['who'], fields?: Record<string, string | string[] | null>): Promise<PortalReply> {
    const reply = method === 'GET' ? await client.get(path) : await client.post(path, fields);
    expected.push({ method, path: logged(path), status: reply.status, who });
    for (const [name, value] of client.cookies) if (name.includes('session')) secrets.set(`session id ${value.slice(0, 6)}`, value);
    if (client.csrf) secrets.set(`CSRF token ${client.csrf.slice(0, 6)}`, client.csrf);
    return reply;
  }

  before(async () => {
    const knex = (await testDatabase()).knex;
    await resetDatabase(knex);
    const world = await createStudyWorld(knex);
    const other = await createStudyWorld(knex, demoDesign('OTHER'));
    const managerId = await addStaff(knex, 'keeper@sdx.test', { study: world.code, role: 'manager', canExport: true });
    const doomed = await makeKey(knex, { study: world.code, by: world.manager, name: 'Doomed' });
    const middle = world.key.length >> 1;
    const typo = `${world.key.slice(0, middle)}${world.key.charAt(middle) === 'x' ? 'y' : 'x'}${world.key.slice(middle + 1)}`;
    const unknown = generateKeyValue();
    const basic = `Basic ${Buffer.from(`${world.key}:`).toString('base64')}`;
    for (const [label, value] of [['key', world.key], ['key of another study', other.key], ['key to be revoked', doomed.key], ['mistyped key', typo], ['unknown key', unknown]] as const) {
      secrets.set(label, value);
      secrets.set(`${label}, without its prefix`, value.slice('sdx_'.length));
      secrets.set(`${label}, its 256-bit secret`, value.slice('sdx_'.length, 'sdx_'.length + 43));
    }
    secrets.set('key in a Basic header', basic.slice('Basic '.length));
    secrets.set('password', STAFF_PASSWORD);
    secrets.set('wrong password', WRONG_PASSWORD);

    service = await startServiceProcess({ ACCESS_LOG: 'on' });
    const key = { key: world.key, keyId: world.keyId };
    const base = `/api/v1/studies/${world.code}`;

    // Every operation with a working key.
    expect((await api('GET', base, key)).status).to.equal(200);
    const enrolled = await api<AnswerOf<'createPatient', 201>>('POST', `${base}/patients`, { ...key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' } });
    expect(enrolled.status).to.equal(201);
    const subject = enrolled.body.subject;
    await giveConsent(knex, world.code, subject, '2016-12-01');
    const saved = await api<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { ...key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '80', hr: '70' } }] } });
    expect(saved.body.counts.ok).to.equal(1);
    expect((await api('POST', `${base}/patients`, { ...key, body: { site: '02', sex: 'female', birth_year: 1970, enrolled_on: '2016-12-28' } })).status).to.equal(201);
    const page = await api<AnswerOf<'listPatients', 200>>('GET', `${base}/patients?limit=1`, key);
    expect((await api('GET', `${base}/patients?limit=1&after=${page.body.next}`, key)).status).to.equal(200);
    expect((await api('GET', `${base}/records?subject=${subject}`, key)).status).to.equal(200);
    expect((await api('GET', `${base}/queries?status=open`, key)).status).to.equal(200);
    const imported = await api<AnswerOf<'importFhirRecord', 201>>('POST', `${base}/fhir?subject=${subject}`, { ...key, raw: BUSTER, contentType: 'application/fhir+json' });
    expect(imported.status).to.equal(201);
    expect((await api('GET', '/api/v1/openapi.json')).status).to.equal(200);

    // Refusals: wrong, mistyped, malformed and misplaced keys, and refused requests of a working key.
    expect((await api('GET', base)).status).to.equal(401);
    expect((await api<Problem>('GET', base, { key: typo })).body.code).to.equal('key_malformed');
    expect((await api<Problem>('GET', base, { key: unknown })).body.code).to.equal('key_unknown');
    expect((await api<Problem>('GET', base, { authorization: basic })).body.code).to.equal('key_malformed');
    expect((await api('GET', base, { key: other.key, keyId: other.keyId })).status).to.equal(404);
    expect((await api('GET', `${base}?api_key=${world.key}`)).status).to.equal(401);
    expect((await api('GET', `${base}?api_key=${world.key}`, key)).status).to.equal(400);
    expect((await api('GET', `/api/v1/studies/${world.key}`, key)).status).to.equal(404);
    // Refused before the key is looked at: no key id in these lines.
    expect((await api('DELETE', base, { key: world.key })).status).to.equal(405);
    expect((await api('POST', `${base}/records`, { ...key, body: { records: Array(501).fill({ subject, visit: 'week4', form: 'vs', values: {} }) } })).status).to.equal(413);
    expect((await api('POST', `${base}/patients`, { ...key, body: { site: '01', sex: 'robot' } })).status).to.equal(422);
    expect((await api('POST', `${base}/patients`, { key: world.key, raw: `key=${world.key}`, contentType: 'application/x-www-form-urlencoded' })).status).to.equal(415);

    // The portal: a wrong password, then the right one, the pages, a key made and one revoked, a FHIR review, sign-out.
    const browser = new PortalClient(service.baseUrl);
    const signedIn = { user_id: managerId };
    expect((await portal(browser, 'GET', '/portal/sign-in', {})).status).to.equal(200);
    expect((await portal(browser, 'POST', '/portal/sign-in', {}, { email: 'keeper@sdx.test', password: WRONG_PASSWORD })).status).to.equal(401);
    expect((await portal(browser, 'POST', '/portal/sign-in', null, { email: 'keeper@sdx.test', password: STAFF_PASSWORD })).status).to.equal(303);
    const session = present(browser.cookies.get('sdx_session'), 'the session cookie');
    expect((await portal(browser, 'GET', '/portal', signedIn)).status).to.equal(200);
    expect((await portal(browser, 'GET', `/p/${world.code}/api`, signedIn)).status).to.equal(200);
    const made = await portal(browser, 'POST', `/p/${world.code}/api/keys`, signedIn, { name: 'Made in the portal', read: 'on', write: 'on', sites: ['01'], term: '30' });
    expect(made.status).to.equal(201);
    const shown = present(/id="key-value" readonly value="(sdx_[0-9A-Za-z]{49})"/.exec(made.html)?.[1], 'the key shown once');
    secrets.set('key made in the portal', shown);
    secrets.set('key made in the portal, its 256-bit secret', shown.slice(4, 47));
    expect((await portal(browser, 'GET', `/p/${world.code}/api/keys/${doomed.id}/revoke`, signedIn)).status).to.equal(200);
    expect((await portal(browser, 'POST', `/p/${world.code}/api/keys/${doomed.id}/revoke`, signedIn)).status).to.equal(303);
    expect((await portal(browser, 'GET', `/p/${world.code}/s/${subject}`, signedIn)).status).to.equal(200);
    const review = new URL(imported.body.review_url).pathname;
    expect((await portal(browser, 'GET', review, signedIn)).status).to.equal(200);
    expect((await portal(browser, 'POST', review, signedIn, { decision: 'confirm_all' })).status).to.equal(303);
    expect((await portal(browser, 'GET', `/p/${world.key}`, { user_id: managerId })).status).to.equal(403);
    expect((await portal(browser, 'POST', '/portal/sign-out', null)).status).to.equal(303);
    // The cookie of the ended session, replayed.
    const replay = new PortalClient(service.baseUrl);
    replay.cookies.set('sdx_session', session);
    expect((await portal(replay, 'GET', `/p/${world.code}/api`, {})).status).to.equal(303);

    // The key made in the portal works; the revoked one no longer does.
    const portalKeyId = present(await knex('api_keys').where({ name: 'Made in the portal' }).first<{ id: number } | undefined>('id'), 'the key made in the portal').id;
    expect((await api('GET', base, { key: shown, keyId: portalKeyId })).status).to.equal(200);
    expect((await api<Problem>('GET', base, { key: doomed.key })).body.code).to.equal('key_revoked');

    await service.stop();
    log = service.output();
  });
  after(() => service?.stop());

  it('logs one line per request: method, path without query values, status, time, and the key or the person, by id', () => {
    const lines = log.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as AccessLine);
    const requests = lines.filter((l) => l.request_id);
    expect(requests.map((l) => `${l.method} ${l.path} ${l.status}`)).to.deep.equal(expected.map((e) => `${e.method} ${e.path} ${e.status}`));
    requests.forEach((line, i) => {
      expect(Object.keys(line)).to.include.members(['level', 'at', 'request_id', 'method', 'path', 'query', 'status', 'ms']);
      expect(line.ms).to.be.a('number');
      const who = at(expected, i).who;
      if (who) expect({ key_id: line.key_id, user_id: line.user_id }, `${line.method} ${line.path}`).to.deep.equal({ key_id: who.key_id, user_id: who.user_id });
    });
    // Query parameters by name only.
    expect(requests.filter((l) => l.query.includes('api_key'))).to.have.length(2);
    expect(requests.find((l) => l.path.endsWith('/patients') && l.query.includes('after'))?.query).to.deep.equal(['limit', 'after']);
  });

  it('holds no key value, no part of one that authenticates, and no fingerprint of one', () => {
    const keySecrets = [...secrets].filter(([label]) => /key/.test(label));
    expect(keySecrets.length).to.be.at.least(18);
    for (const [label, value] of keySecrets) {
      expect(value.length, label).to.be.at.least(43);
      for (const form of forms(value)) expect(log.includes(form), `${label} (${form.slice(0, 10)}…) is in the log`).to.equal(false);
    }
  });

  it('holds no password, no session id and no CSRF token', () => {
    const others = [...secrets].filter(([label]) => !/key/.test(label));
    expect(others.filter(([label]) => label.startsWith('session id')).length, 'session ids before and after sign-in').to.be.at.least(2);
    expect(others.filter(([label]) => label.startsWith('CSRF token')).length, 'tokens of both sessions').to.be.at.least(2);
    for (const [label, value] of others) {
      expect(value.length, label).to.be.at.least(16);
      for (const form of forms(value)) expect(log.includes(form), `${label} is in the log`).to.equal(false);
    }
  });
});
