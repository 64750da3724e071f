import { expect } from 'chai';
import fc from 'fast-check';
import { hostileString, runs } from '../helpers/hostileInput.js';
import { at } from '../helpers/only.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * Hostile addresses and forms on the staff portal: a page is never a 5xx and never shows a stack, and a
 * NUL in a path segment or a form field (which reached PostgreSQL and gave a 500) is refused up front.
 */

const percentEncoded = (text: string) => [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

function expectNoFault(page: PortalReply, context: string): void {
  expect(page.status, context).to.be.below(500);
  expect(page.html, context).not.to.match(/\bat .*\.(?:[cm]?js|ts):\d+:\d+/);
  expect(page.html, context).not.to.include('invalid byte sequence');
}

describe('hostile input: staff portal', function () {
  this.timeout(60_000);
  const { app, world } = useStudyWorld();
  let manager: PortalClient;

  before(async () => {
    await addStaff(app.db.knex, 'portal-manager@sdx.test', { study: world.code, role: 'manager', canExport: true, unblinded: true });
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('portal-manager@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  it('answers any study code, subject and import number in the address without a 5xx or a stack', async () => {
    const segment = hostileString(60).map(percentEncoded);
    await fc.assert(fc.asyncProperty(segment, segment, fc.constantFrom('/p/{a}', '/p/{a}/api', '/p/{s}/s/{a}', '/p/{s}/s/{a}/fhir/{b}'), async (a, b, shape) => {
      const path = shape.replace('{s}', world.code).replace('{a}', a).replace('{b}', b);
      expectNoFault(await manager.get(path), path);
    }), runs(60));
  });

  it('answers a NUL in a path segment with 404, as a page that does not exist', async () => {
    for (const path of [`/p/${world.code}%00`, `/p/${world.code}/s/01%00-001`, `/p/${world.code}/s/01-001/fhir/1%00`]) {
      const page = await manager.get(path);
      expect(page.status, path).to.equal(404);
      expect(page.html).to.include('There is no such page.');
    }
  });

  it('refuses a form with a NUL in a field with 400, doing nothing: no sign-in looked up, no key made', async () => {
    const visitor = new PortalClient(app.baseUrl);
    await visitor.get('/portal/sign-in');
    const signIn = await visitor.post('/portal/sign-in', { email: 'portal-manager\u0000@sdx.test', password: STAFF_PASSWORD });
    expect(signIn.status).to.equal(400);
    expect(signIn.html).to.include('The form could not be read; nothing was done.');

    await manager.get(`/p/${world.code}/api`);
    const keys = async () => Number(at(await app.db.knex('api_keys').count<{ n: string }[]>({ n: '*' }), 0).n);
    const keysBefore = await keys();
    const key = await manager.post(`/p/${world.code}/api/keys`, { name: 'LIMS\u0000', read: 'on', sites: '01', term: '30' });
    expect(key.status).to.equal(400);
    expect(await keys()).to.equal(keysBefore);
  });
});
