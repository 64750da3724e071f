import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import Router from '@koa/router';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import knexFactory from 'knex';
import { createApp, createServices } from '../../src/app.js';
import { generateKeyValue } from '../../src/domain/apiKeys/keyValue.js';
import type { PortalState } from '../../src/portal/portalState.js';
import { capturingStderr } from '../helpers/capturingStderr.js';
import { createStudyWorld, demoDesign, giveConsent, makeKey, type StudyWorld } from '../helpers/factories.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { testConfig } from '../helpers/testDatabase.js';

/**
 * The OWASP API Security Top 10 (2023) items that no other file tests (SECURITY.md lists every item
 * with the test that covers it): object-level access across studies in the portal, response members
 * and body members outside the spec, the portal's form limit, keys and sessions kept apart, an
 * enrolment flood, no request made to an address a FHIR body names, the headers of every answer of
 * every status class, and the inventory of routes against SECURITY.md and the spec.
 */

type Spec = { paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, Record<string, unknown>> } };
const spec = yaml.load(readFileSync('spec/openapi.yaml', 'utf8')) as Spec;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const ENROLMENT = { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-01-12' };
/** The patient and one heart rate at baseline: a value to review, so the import waits, `proposed`. */
const FHIR_RECORD = JSON.stringify({
  resourceType: 'Bundle', type: 'collection', entry: [
    { resource: { resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1960-05-01' } },
    {
      resource: {
        resourceType: 'Observation', id: 'hr1', status: 'final', subject: { reference: 'Patient/p1' }, effectiveDateTime: '2026-01-12T09:00:00Z',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] }, valueQuantity: { value: 64, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
      },
    },
  ],
});

/** The service over a database of its own choosing, for the failures a healthy database never gives. */
async function serveOver(connection: string, searchPath?: string): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const knex = knexFactory({
    client: 'pg', connection, pool: { min: 0, max: 2 }, acquireConnectionTimeout: 5000, ...(searchPath ? { searchPath: [searchPath] } : {}),
    // Knex warns of every failed connection on the console; the test asserts what the service answers instead.
    log: { warn: () => undefined },
  });
  const app = await createApp(createServices(testConfig(), { knex, url: connection, close: () => knex.destroy() }));
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await knex.destroy();
    },
  };
}

describe('OWASP API Security Top 10 (2023): what no other file covers', () => {
  const { app, world } = useStudyWorld();
  let small: TestApp;
  let other: StudyWorld;
  let manager: PortalClient;

  before(async () => {
    small = await startTestApp({ RATE_LIMIT_PER_MINUTE: '5' });
    const { knex } = app.db;
    other = await createStudyWorld(knex, demoDesign('OTHER'));
    // The same subject in both studies, each with a FHIR import: only the study code tells them apart.
    for (const study of [world, other]) {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${study.code}/patients`, { key: study.key, body: ENROLMENT });
      expect(enrolled.body.subject).to.equal('01-001');
      await giveConsent(knex, study.code, '01-001');
    }
    const imported = await app.call('POST', `/api/v1/studies/${other.code}/fhir?subject=01-001`, { key: other.key, raw: FHIR_RECORD, contentType: 'application/fhir+json' });
    expect(imported.status).to.equal(201);
    await addStaff(knex, 'demo-manager@sdx.test', { study: world.code, role: 'manager', canExport: true });
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('demo-manager@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });
  after(() => small.close());

  describe('API1 broken object level authorization', () => {
    it('keeps a manager of one study off the patient card, FHIR review and keys of another study, even under the same subject', async () => {
      expect((await manager.get(`/p/${world.code}/s/01-001`)).status, 'the own study\'s patient').to.equal(200);
      const unaddressed = (html: string) => html.replace(/Request id: [0-9a-f-]+/, '').replace(/href="[^"]*\?lang=/g, 'href="?lang=');
      const missing = await manager.get('/p/NOSUCH/s/01-001');
      for (const path of [`/p/${other.code}/s/01-001`, `/p/${other.code}/s/01-001/fhir/1`, `/p/${other.code}/api`, `/p/${other.code}`]) {
        const res = await manager.get(path);
        expect(res.status, path).to.equal(403);
        expect(unaddressed(res.html), `${path} answers as a study that does not exist`).to.equal(unaddressed(missing.html));
      }
      // Decisions and revocations addressed through the own study never reach the other study's objects.
      await manager.get(`/p/${world.code}/s/01-001`);
      const decided = await manager.post(`/p/${world.code}/s/01-001/fhir/1`, { decision: 'reject', reason: 'not ours' });
      expect(decided.status).to.equal(404);
      expect((await app.db.knex('fhir_imports').first<{ status: string } | undefined>('status'))?.status).to.equal('proposed');
      expect((await manager.get(`/p/${world.code}/api/keys/${other.keyId}/revoke`)).status).to.equal(404);
      expect((await manager.post(`/p/${world.code}/api/keys/${other.keyId}/revoke`)).status).to.equal(404);
      expect((await app.call('GET', `/api/v1/studies/${other.code}`, { key: other.key })).status, 'the other study\'s key still works').to.equal(200);
    });
  });

  describe('API3 broken object property level authorization', () => {
    it('closes every object the API answers with, so the check of every answer refuses a member the spec does not name', async () => {
      // Open on purpose: a FHIR resource echoed back and the OpenAPI document itself.
      const open = new Set(['FhirResource', 'OpenApiDocument', 'OpenApiOperation']);
      for (const [name, schema] of Object.entries(spec.components.schemas)) {
        if (schema.type !== 'object' || open.has(name)) continue;
        expect(schema.additionalProperties, `${name}: additionalProperties`).to.not.equal(undefined).and.not.equal(true);
      }
      const page = await app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients`, { key: world.key });
      expect(page.body.patients).to.have.length(1);
      await assertMatchesSpec('listPatients', 200, 'application/json', page.body);
      const leaky = { ...page.body, patients: [{ ...at(page.body.patients, 0), email: 'anna@hospital.invalid' }] };
      let refused: unknown;
      await assertMatchesSpec('listPatients', 200, 'application/json', leaky).catch((e) => { refused = e; });
      expect(String(refused)).to.match(/breaks the spec.*additionalProperties/);
      const problem = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`);
      refused = undefined;
      await assertMatchesSpec('getStudyDesign', 401, 'application/problem+json', { ...problem.body, stack: 'Error at x.ts:1' }).catch((e) => { refused = e; });
      expect(String(refused)).to.match(/problem body breaks the spec/);
    });

    it('refuses body members the spec does not name (no mass assignment), keeping nothing', async () => {
      const patients = Number(only(await app.db.knex('patients').count({ n: '*' })).n);
      for (const [member, value] of [['status', 'withdrawn'], ['email', 'anna@hospital.invalid'], ['study', other.code]] as const) {
        const res = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { ...ENROLMENT, [member]: value } });
        expect(res.status, member).to.equal(422);
        expect(res.body.errors?.map((e) => e.pointer)).to.deep.equal([`/${member}`]);
      }
      const record = { subject: '01-001', visit: 'screening', form: 'vs', values: { vsdate: '2025-12-25', sbp: '120', dbp: '80', hr: '70' } };
      for (const [member, value] of [['source', 'portal'], ['id', 1], ['author', 'Someone else']] as const) {
        const res = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: [{ ...record, [member]: value }] } });
        expect(res.status, member).to.equal(422);
        expect(res.body.errors?.map((e) => e.pointer)).to.deep.equal([`/records/0/${member}`]);
      }
      expect(Number(only(await app.db.knex('patients').count({ n: '*' })).n)).to.equal(patients);
      expect(await app.db.knex('records')).to.have.length(0);
    });
  });

  describe('API4 unrestricted resource consumption', () => {
    it('refuses a portal form over 1 MB with 413, acting on none of it', async () => {
      await manager.get(`/p/${world.code}/api`);
      const res = await manager.post(`/p/${world.code}/api/switch`, { api: 'off', padding: 'x'.repeat(1024 * 1024) });
      expect(res.status).to.equal(413);
      expect((await app.db.knex('studies').where({ code: world.code }).first<{ api_enabled: boolean } | undefined>())?.api_enabled).to.equal(true);
    });
  });

  describe('API5 broken function level authorization', () => {
    it('keeps keys and sessions apart: a key opens no portal page, a signed-in person\'s cookie no API call', async () => {
      const asKey = await fetch(`${app.baseUrl}/p/${world.code}/api`, { redirect: 'manual', headers: { authorization: `Bearer ${world.key}` } });
      expect(asKey.status).to.equal(303);
      expect(asKey.headers.get('location')).to.match(/^\/portal\/sign-in\?next=/);
      const cookie = [...manager.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
      const patients = Number(only(await app.db.knex('patients').count({ n: '*' })).n);
      const read = await app.call<Problem>('GET', `/api/v1/studies/${world.code}/patients`, { headers: { cookie } });
      const enrol = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/patients`, { headers: { cookie }, body: ENROLMENT });
      expect([read, enrol].map((r) => `${r.status} ${r.body.code}`)).to.deep.equal(['401 key_missing', '401 key_missing']);
      expect(Number(only(await app.db.knex('patients').count({ n: '*' })).n)).to.equal(patients);
    });
  });

  describe('API6 unrestricted access to sensitive business flows', () => {
    it('bounds an enrolment flood by the key\'s rate limit: enrolments beyond it within the minute make no patient', async () => {
      const { key } = await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Flooding system' });
      const count = async () => Number(only(await app.db.knex('patients').count({ n: '*' })).n);
      const before = await count();
      const answers = await Promise.all(Array.from({ length: 8 }, () => small.call('POST', `/api/v1/studies/${world.code}/patients`, { key, body: { ...ENROLMENT, site: '02' } })));
      expect(answers.map((a) => a.status).sort()).to.deep.equal([201, 201, 201, 201, 201, 429, 429, 429]);
      expect(await count()).to.equal(before + 5);
      const audited = await app.db.knex('audit_events').where({ action: 'patient.enrolled' }).whereIn('patient_id', app.db.knex('patients').where('subject', 'like', '02-%').select('id'));
      expect(audited).to.have.length(5);
    });
  });

  describe('API7 server side request forgery', () => {
    it('requests nothing a FHIR body points at: references, full URLs and links to a listening server are never fetched', async () => {
      const asked: string[] = [];
      const target = createServer((req, res) => {
        asked.push(`${req.method} ${req.url}`);
        res.end('{}');
      });
      await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
      try {
        const bundle = {
          resourceType: 'Bundle', type: 'collection', link: [{ relation: 'next', url: `${url}/Bundle?page=2` }],
          entry: [
            { fullUrl: `${url}/Patient/p1`, resource: { resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1960-05-01', photo: [{ url: `${url}/photo.png` }] } },
            {
              fullUrl: `${url}/Observation/o1`,
              resource: {
                resourceType: 'Observation', id: 'o1', status: 'final', subject: { reference: `${url}/Patient/p1` }, effectiveDateTime: '2026-01-12',
                code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] }, valueQuantity: { value: 71, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
                hasMember: [{ reference: `${url}/Observation/o2` }], derivedFrom: [{ reference: `${url}/Media/m1` }],
              },
            },
          ],
        };
        const res = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${world.code}/fhir?subject=01-001`, { key: world.key, raw: JSON.stringify(bundle), contentType: 'application/fhir+json' });
        // Read and mapped as data: the heart rate is proposed, and nothing was asked of the addresses it names.
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body.items.map((i) => `${i.field}=${i.value}`)).to.include('hr=71');
        expect(asked).to.deep.equal([]);
      } finally {
        await new Promise((resolve) => target.close(resolve));
      }
    });
  });

  describe('API8 security misconfiguration', () => {
    /** The headers every answer carries, whatever its status or kind. */
    function expectSafeHeaders(headers: Headers, what: string): void {
      expect(headers.get('x-content-type-options'), `${what}: X-Content-Type-Options`).to.equal('nosniff');
      expect(headers.get('referrer-policy'), `${what}: Referrer-Policy`).to.equal('no-referrer');
      expect(headers.get('content-security-policy'), `${what}: Content-Security-Policy`).to.match(/^default-src '(none|self)'.*frame-ancestors 'none'/);
      expect(headers.get('x-request-id'), `${what}: X-Request-Id`).to.match(/^[0-9a-f-]{36}$/);
      // The study design is revalidated by its ETag; the portal's and the reference page's static files may be kept an hour.
      expect(headers.get('cache-control'), `${what}: Cache-Control`).to.be.oneOf(['no-store', 'private, no-cache', 'public, max-age=3600']);
      for (const name of ['access-control-allow-origin', 'access-control-allow-credentials', 'x-powered-by', 'server']) {
        expect(headers.get(name), `${what}: no ${name}`).to.equal(null);
      }
    }

    it('sends the same security headers on answers of every status class, from the API, the portal and the documentation', async () => {
      const etag = present((await app.call('GET', `/api/v1/studies/${world.code}`, { key: world.key })).headers.get('etag'), 'the ETag');
      const apiBase = `/api/v1/studies/${world.code}`;
      const requests: [string, number, () => Promise<{ status: number; headers: Headers; body: unknown }>][] = [
        ['the contract', 200, () => app.call('GET', '/api/v1/openapi.json')],
        ['the documentation page', 200, () => app.call('GET', '/api/v1/docs')],
        ['an enrolment', 201, () => app.call('POST', `${apiBase}/patients`, { key: world.key, body: { ...ENROLMENT, site: '02' } })],
        ['a design not changed', 304, () => app.call('GET', apiBase, { key: world.key, headers: { 'if-none-match': etag } })],
        ['a portal page', 200, () => manager.get(`/p/${world.code}`).then((r) => ({ ...r, body: r.html }))],
        ['the portal style sheet', 200, () => manager.get('/portal/static/portal.css').then((r) => ({ ...r, body: r.html }))],
        ['a portal redirect to sign-in', 303, () => new PortalClient(app.baseUrl).get('/portal').then((r) => ({ ...r, body: r.html }))],
        ['a wrong filter', 400, () => app.call('GET', `${apiBase}/records?colour=red`, { key: world.key })],
        ['no key', 401, () => app.call('GET', apiBase)],
        ['a wrong password', 401, () => new PortalClient(app.baseUrl).signIn('demo-manager@sdx.test', 'not the password').then((r) => ({ ...r, body: r.html }))],
        ['a right the key lacks', 403, async () => app.call('POST', `${apiBase}/patients`, { key: (await makeKey(app.db.knex, { study: world.code, by: world.manager, canEnrol: false })).key, body: ENROLMENT })],
        ['a portal page of another study', 403, () => manager.get(`/p/${other.code}`).then((r) => ({ ...r, body: r.html }))],
        ['another study', 404, () => app.call('GET', `/api/v1/studies/${other.code}`, { key: world.key })],
        ['an address nobody serves', 404, () => app.call('GET', '/admin')],
        ['a portal page that does not exist', 404, () => manager.get('/portal/admin').then((r) => ({ ...r, body: r.html }))],
        ['a method the address lacks', 405, () => app.call('PUT', apiBase, { key: world.key })],
        ['too many records', 413, () => app.call('POST', `${apiBase}/records`, { key: world.key, body: { records: Array(501).fill({ subject: '01-001', visit: 'week4', form: 'vs', values: {} }) } })],
        ['a body of an undeclared type', 415, () => app.call('POST', `${apiBase}/patients`, { key: world.key, raw: 'site=01', contentType: 'text/plain' })],
        ['an invalid body', 422, () => app.call('POST', `${apiBase}/patients`, { key: world.key, body: {} })],
      ];
      for (const [what, status, send] of requests) {
        const res = await send();
        expect(res.status, what).to.equal(status);
        expectSafeHeaders(res.headers, what);
        expect(typeof res.body === 'string' ? res.body : JSON.stringify(res.body), `${what}: no stack`).to.not.match(/\bat .*\.(ts|js):\d+|node_modules/);
      }
      // 429: a key over its window (RATE_LIMIT_PER_MINUTE=5 on `small`).
      const { key } = await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Hasty' });
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await small.call('GET', apiBase, { key }));
      const last = at(answers, answers.length - 1);
      expect(last.status).to.equal(429);
      expectSafeHeaders(last.headers, 'too many requests');
    });

    it('answers an unexpected failure with 500 and its request id only, logging the stack; an unreachable database with 503 and Retry-After', async () => {
      // A database without the service's tables (the schema does not exist): every query fails.
      const unmigrated = await serveOver(app.db.url, 'sdx_no_such_schema');
      const down = await serveOver('postgres://sdx@127.0.0.1:1/sdx');
      try {
        const key = generateKeyValue();
        const { result, stderr } = await capturingStderr(async () => {
          const response = await fetch(`${unmigrated.baseUrl}/api/v1/studies/${world.code}`, { headers: { authorization: `Bearer ${key}` } });
          return { status: response.status, headers: response.headers, body: await response.json() as Problem };
        });
        expect(result.status).to.equal(500);
        expectSafeHeaders(result.headers, '500');
        await assertMatchesSpec(null, 500, result.headers.get('content-type') ?? '', result.body);
        expect(result.body).to.deep.include({ code: 'internal', request_id: result.headers.get('x-request-id') });
        expect(JSON.stringify(result.body)).to.not.match(/api_keys|select|sdx_no_such_schema|\.ts:\d+/);
        const logged = JSON.parse(stderr.trim()) as { error: string } & Record<string, unknown>;
        expect(logged).to.include({ level: 'error', request_id: result.body.request_id, method: 'GET', path: `/api/v1/studies/${world.code}` });
        expect(logged.error).to.match(/relation "api_keys" does not exist[\s\S]*\.ts:\d+/);
        expect(stderr, 'the key is not in the log').to.not.include(key);

        const unavailable = await fetch(`${down.baseUrl}/api/v1/studies/${world.code}`, { headers: { authorization: `Bearer ${key}` } });
        const body = await unavailable.json() as unknown;
        expect(unavailable.status).to.equal(503);
        expectSafeHeaders(unavailable.headers, '503');
        expect(unavailable.headers.get('retry-after')).to.equal('5');
        await assertMatchesSpec('getStudyDesign', 503, unavailable.headers.get('content-type') ?? '', body);
      } finally {
        await Promise.all([unmigrated.close(), down.close()]);
      }
    });

    it('allows no cross-origin use: no CORS header on any answer, and a preflight is refused', async () => {
      const origin = 'https://elsewhere.example';
      const preflight = await fetch(`${app.baseUrl}/api/v1/studies/${world.code}/patients`, {
        method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      expect(preflight.status).to.equal(405);
      expectSafeHeaders(preflight.headers, 'preflight');
      const read = await fetch(`${app.baseUrl}/api/v1/studies/${world.code}`, { headers: { origin, authorization: `Bearer ${world.key}` } });
      expect(read.status).to.equal(200);
      expectSafeHeaders(read.headers, 'cross-origin read');
    });

    it('sends Strict-Transport-Security behind an https BASE_URL only', async () => {
      const secure = await startTestApp({ BASE_URL: 'https://sdx.test' });
      try {
        for (const path of ['/api/v1/openapi.json', '/portal/sign-in', '/nothing']) {
          expect((await fetch(`${secure.baseUrl}${path}`)).headers.get('strict-transport-security'), path).to.equal('max-age=31536000');
          expect((await fetch(`${app.baseUrl}${path}`)).headers.get('strict-transport-security'), `${path} over http`).to.equal(null);
        }
      } finally {
        await secure.close();
      }
    });
  });

  describe('API9 improper inventory management', () => {
    /** The rows of SECURITY.md's inventory table: `METHOD path`. */
    const inventory = (): string[] => {
      const section = present(readFileSync('SECURITY.md', 'utf8').split(/^## /m).find((s) => s.startsWith('Inventory')), 'the inventory section');
      return [...section.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
    };

    it('answers only the routes listed in SECURITY.md: the spec\'s operations and the portal\'s pages and forms', async () => {
      const listed = inventory();
      const fromSpec = Object.entries(spec.paths).flatMap(([path, item]) => Object.keys(item).filter((m) => HTTP_METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`));
      // Every portal route module, as the portal registers it (a new module is picked up by its file).
      const router = new Router<PortalState>();
      const services = createServices(testConfig(), app.db);
      for (const file of readdirSync('src/portal/routes').filter((f) => f.endsWith('.ts'))) {
        const module = await import(pathToFileURL(`src/portal/routes/${file}`).href) as Record<string, unknown>;
        for (const [name, register] of Object.entries(module)) if (name.endsWith('Routes')) (register as (r: Router<PortalState>, s: typeof services) => void)(router, services);
      }
      const fromPortal = router.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`));
      const statics = ['GET /portal/static/portal.css', 'GET /portal/static/portal.js'];
      expect(listed.filter((r) => r.includes(' /api/')), 'the API rows are the spec\'s operations').to.have.members(fromSpec);
      expect(listed.filter((r) => !r.includes(' /api/')), 'the portal rows are its routes and two static files').to.have.members([...fromPortal, ...statics]);
      for (const row of statics) expect((await fetch(`${app.baseUrl}${row.split(' ')[1]}`)).status, row).to.equal(200);
    });

    it('answers 404 to addresses outside the inventory and 405 to every method an API address does not declare', async () => {
      for (const path of ['/', '/api', '/api/v1', '/api/v1/studies', '/api/v0/studies/DEMO', '/api/v2/studies/DEMO', `/api/v1/studies/${world.code}/keys`, `/api/v1/studies/${world.code}/settings`,
        `/api/v1/studies/${world.code}/patients/01-001`, '/admin', '/metrics', '/health', '/debug', '/.env', '/graphql', '/swagger.json']) {
        const res = await app.call('GET', path, { key: world.key });
        expect(res.status, path).to.equal(404);
      }
      for (const [path, item] of Object.entries(spec.paths)) {
        const concrete = path.replace('{study_code}', world.code).replace('{file}', 'swagger-ui.css');
        for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !(m.toLowerCase() in item))) {
          const res = await app.call(method, concrete, { key: world.key });
          expect(res.status, `${method} ${path}`).to.equal(405);
        }
      }
    });
  });
});
