import { expect } from 'chai';
import { giveConsent, type StudyWorld } from '../helpers/factories.js';
import { startHostileWorld } from '../helpers/hostileInput.js';
import { PortalClient } from '../helpers/portalClient.js';
import { STAFF_PASSWORD, addStaff } from '../helpers/portalPeople.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import type { TestApp } from '../helpers/testApp.js';

/**
 * Numbers and names in an address that the database or a plain object cannot hold (issue 21.6, 21.7): a key
 * id or import number beyond PostgreSQL's `integer` was a 500, a paging token carrying such an id too, and
 * `/portal/static/__proto__` found the object prototype and answered 204 with a one-hour cache header.
 */

/** Beyond int4, far beyond it, below it, and spellings that are numbers to JavaScript but not to the portal's links. */
const BAD_NUMBERS = ['2147483648', '99999999999999999999', '-1', '0', '1e3', '01', '1.0', '+1', '0x10', ' 1'];

describe('out-of-range numbers and names in addresses', function () {
  this.timeout(60_000);
  let app: TestApp;
  let world: StudyWorld;
  let subject: string;
  let manager: PortalClient;

  before(async () => {
    ({ app, world, subject } = await startHostileWorld());
    await addStaff(app.db.knex, 'range-manager@sdx.test', { study: world.code, role: 'manager', canExport: true, unblinded: true });
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('range-manager@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });
  after(() => app.close());

  it('answers a key id or import number outside `integer` (or not written as the portal writes it) with 404 on every page that takes one', async () => {
    await manager.get(`/p/${world.code}/api`);
    for (const raw of BAD_NUMBERS) {
      const segment = encodeURIComponent(raw);
      for (const [method, path] of [
        ['GET', `/p/${world.code}/s/${subject}/fhir/${segment}`],
        ['POST', `/p/${world.code}/s/${subject}/fhir/${segment}`],
        ['GET', `/p/${world.code}/api/keys/${segment}/revoke`],
        ['POST', `/p/${world.code}/api/keys/${segment}/revoke`],
      ] as const) {
        const page = method === 'GET' ? await manager.get(path) : await manager.post(path, { decision: 'reject' });
        expect(page.status, `${method} ${path}`).to.equal(404);
        expect(page.html, `${method} ${path}`).to.include('There is no such page.');
      }
    }
    // The largest value of the column is still a number the page looks up: no such key, no such import.
    expect((await manager.get(`/p/${world.code}/api/keys/2147483647/revoke`)).status).to.equal(404);
    expect((await manager.get(`/p/${world.code}/s/${subject}/fhir/2147483647`)).status).to.equal(404);
    // And the key revoke page still finds the study's real key.
    expect((await manager.get(`/p/${world.code}/api/keys/${world.keyId}/revoke`)).status).to.equal(200);
  });

  it('answers a `limit` beyond its range, 20 digits or negative with 400 naming it; `1e3` is the number 1000', async () => {
    for (const raw of ['2147483648', '99999999999999999999', '-1', '0', '1001', '1e4', '1.5']) {
      const reply = await app.call<Problem>('GET', `/api/v1/studies/${world.code}/patients?limit=${encodeURIComponent(raw)}`, { key: world.key });
      expect(reply.status, raw).to.equal(400);
      expect(reply.body.code, raw).to.equal('invalid_parameter');
      expect(reply.body.errors?.map((e) => e.pointer), raw).to.deep.equal(['/query/limit']);
    }
    expect((await app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients?limit=1e3`, { key: world.key })).status).to.equal(200);
  });

  it('answers a paging token rewritten to carry an id beyond the id column with an empty page, never a 500', async () => {
    const second = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1971, enrolled_on: '2026-03-09' },
    });
    await giveConsent(app.db.knex, world.code, second.body.subject, '2026-03-01');
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key,
      body: { records: [subject, second.body.subject].map((s) => ({ subject: s, visit: 'unscheduled', form: 'vs', instance: 1, values: { vsdate: '2026-03-10', sbp: '120', dbp: '80', hr: '70' } })) },
    });
    expect(saved.status).to.equal(200);
    // patients.id is an `integer`, records.id a `bigint`.
    for (const operation of ['patients', 'records'] as const) {
      const first = await app.call<AnswerOf<'listPatients' | 'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1`, { key: world.key });
      expect(first.body.next, operation).to.be.a('string');
      // A token is base64url JSON that a key holder can read and rewrite; its digest binds it to the filters, not to its id.
      const parsed = JSON.parse(Buffer.from(present(first.body.next, 'the next token'), 'base64url').toString('utf8')) as Record<string, unknown>;
      for (const id of [2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
        const forged = Buffer.from(JSON.stringify({ ...parsed, a: id })).toString('base64url');
        const reply = await app.call<Partial<Record<typeof operation, unknown[]>>>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1&after=${forged}`, { key: world.key });
        expect(reply.status, `${operation} after id ${id}`).to.equal(200);
        expect(reply.body[operation], `${operation} after id ${id}`).to.deep.equal([]);
      }
    }
  });

  it('serves the portal\'s static files and nothing the object prototype holds', async () => {
    expect((await manager.get('/portal/static/portal.css')).status).to.equal(200);
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']) {
      const reply = await manager.get(`/portal/static/${name}`);
      expect(reply.status, name).to.equal(404);
      expect(reply.headers.get('cache-control'), name).to.equal('no-store');
      expect(reply.html, name).to.include('There is no such page.');
    }
  });

  it('serves the reference page\'s assets and nothing the object prototype holds', async () => {
    expect((await app.call('GET', '/api/v1/docs/assets/docs.js')).status).to.equal(200);
    for (const name of ['__proto__', 'constructor', 'tostring', 'hasownproperty', 'valueof']) {
      const reply = await app.call('GET', `/api/v1/docs/assets/${name}`);
      expect(reply.status, name).to.be.oneOf([400, 404]);
      expect(reply.headers.get('cache-control'), name).to.equal('no-store');
    }
    expect((await app.call<Problem>('GET', '/api/v1/docs/assets/constructor')).body.code).to.equal('not_found');
  });
});
