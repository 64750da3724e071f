import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { en as portalEn } from '../../src/portal/messages/en.js';
import { ru as portalRu } from '../../src/portal/messages/ru.js';
import { giveConsent, makeKey } from '../helpers/factories.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';

const PASSWORD = STAFF_PASSWORD;

async function signedIn(app: TestApp, email: string): Promise<PortalClient> {
  const client = new PortalClient(app.baseUrl);
  const res = await client.signIn(email, PASSWORD);
  expect(res.status, `sign-in of ${email}`).to.equal(303);
  return client;
}

describe('staff portal: sign-in, sessions and access rules', () => {
  const { app, world } = useStudyWorld();

  before(async () => {
    await addStaff(app.db.knex, 'boss@sdx.test', { study: world.code, role: 'manager', canExport: true });
    await addStaff(app.db.knex, 'staff01@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'] });
    await addStaff(app.db.knex, 'outsider@sdx.test');
    await addStaff(app.db.knex, 'locked@sdx.test', { study: world.code, role: 'site_staff' });
    for (const [site, subject] of [['01', '01-001'], ['02', '02-001']] as const) {
      const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-10' } });
      expect(res.body.subject).to.equal(subject);
      await giveConsent(app.db.knex, world.code, subject);
    }
  });

  it('sends a visitor who is not signed in to the sign-in page, keeping the page asked for, and shows no data', async () => {
    const client = new PortalClient(app.baseUrl);
    for (const path of [`/p/${world.code}/api`, `/p/${world.code}/s/01-001`, `/p/${world.code}`, '/portal']) {
      const res = await client.get(path);
      expect(res.status, path).to.equal(303);
      expect(res.location).to.equal(`/portal/sign-in?next=${encodeURIComponent(path)}`);
      expect(res.html).to.equal(`Redirecting to /portal/sign-in?next=${encodeURIComponent(path)}.`);
    }
    const form = await client.get(`/portal/sign-in?next=${encodeURIComponent(`/p/${world.code}/api`)}`);
    expect(form.status).to.equal(200);
    expect(form.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(form.html).to.include('name="next" value="/p/DEMO/api"');
    const back = await client.post('/portal/sign-in', { email: 'boss@sdx.test', password: PASSWORD, next: `/p/${world.code}/api` });
    expect(back.status).to.equal(303);
    expect(back.location).to.equal(`/p/${world.code}/api`);
  });

  it('never sends a person elsewhere after sign-in than a page of the portal', async () => {
    for (const next of ['https://evil.test/', '//evil.test/p/', '/api/v1/openapi.json', '/p\\evil']) {
      const client = new PortalClient(app.baseUrl);
      const res = await client.signIn('boss@sdx.test', PASSWORD, next);
      expect(res.status, next).to.equal(303);
      expect(res.location, next).to.equal('/portal');
    }
  });

  it('keeps the session in an HttpOnly, SameSite=Lax cookie, gives a new id at sign-in and stores only its hash', async () => {
    const client = new PortalClient(app.baseUrl);
    const form = await client.get('/portal/sign-in');
    const [anonymous] = form.headers.getSetCookie();
    expect(anonymous).to.match(/^sdx_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
    const before = client.cookies.get('sdx_session')!;
    const res = await client.post('/portal/sign-in', { email: 'boss@sdx.test', password: PASSWORD });
    expect(res.status).to.equal(303);
    const after = client.cookies.get('sdx_session')!;
    expect(after).to.match(/^[A-Za-z0-9_-]{43}$/).and.not.equal(before);
    const rows = await app.db.knex('sessions').select<{ id_hash: Buffer; user_id: number }[]>('*');
    const hashOf = (value: string) => createHash('sha256').update(value).digest();
    const mine = rows.find((r) => Buffer.compare(r.id_hash, hashOf(after)) === 0);
    expect(mine, 'the session is stored under the hash of its id').to.include({ user_id: (await app.db.knex('users').where({ email: 'boss@sdx.test' }).first<{ id: number } | undefined>('id'))?.id });
    expect(rows.some((r) => Buffer.compare(r.id_hash, hashOf(before)) === 0), 'the pre-sign-in session is gone').to.equal(false);
    expect(JSON.stringify(rows)).not.to.include(after);
  });

  it('marks the cookie Secure, with the __Host- prefix, when BASE_URL is https', async () => {
    const secureApp = await startTestApp({ BASE_URL: 'https://sdx.test' });
    try {
      const client = new PortalClient(secureApp.baseUrl);
      const form = await client.get('/portal/sign-in');
      expect(form.headers.getSetCookie()[0]).to.match(/^__Host-sdx_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
      const res = await client.post('/portal/sign-in', { email: 'boss@sdx.test', password: PASSWORD });
      expect(res.status).to.equal(303);
      expect(res.headers.getSetCookie()[0]).to.match(/^__Host-sdx_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
      expect((await client.get(`/p/${world.code}/api`)).status).to.equal(200);
    } finally {
      await secureApp.close();
    }
  });

  it('refuses a form post without its session\'s CSRF token with 403, and changes nothing', async () => {
    const boss = await signedIn(app, 'boss@sdx.test');
    await boss.get(`/p/${world.code}/api`);
    const other = await signedIn(app, 'boss@sdx.test');
    await other.get(`/p/${world.code}/api`);
    for (const token of [null, '', 'x'.repeat(43), other.csrf!]) {
      const res = await boss.post(`/p/${world.code}/api/switch`, { api: 'off', _csrf: token });
      expect(res.status, `token ${token}`).to.equal(403);
      expect(res.html).to.include('Form expired');
    }
    const made = await boss.post(`/p/${world.code}/api/keys`, { _csrf: null, name: 'Sneaky', write: 'on', sites: ['01'], term: '30' });
    expect(made.status).to.equal(403);
    expect(await app.db.knex('api_keys').where({ name: 'Sneaky' })).to.have.length(0);
    expect((await app.db.knex('studies').where({ code: world.code }).first<{ api_enabled: boolean } | undefined>())?.api_enabled).to.equal(true);
    // A post from a browser with no session at all, the sign-in form's included.
    const stranger = new PortalClient(app.baseUrl);
    expect((await stranger.post('/portal/sign-in', { email: 'boss@sdx.test', password: PASSWORD })).status).to.equal(403);
    expect(stranger.cookies.size).to.equal(0);
    // The same form with its token goes through.
    expect((await boss.post(`/p/${world.code}/api/switch`, { api: 'off', confirm: 'yes' })).status).to.equal(303);
    expect((await app.db.knex('studies').where({ code: world.code }).first<{ api_enabled: boolean } | undefined>())?.api_enabled).to.equal(false);
    expect((await boss.post(`/p/${world.code}/api/switch`, { api: 'on' })).status).to.equal(303);
  });

  it('refuses a form with more fields than a form can have, acting on none of it', async () => {
    const boss = await signedIn(app, 'boss@sdx.test');
    await boss.get(`/p/${world.code}/api`);
    const fields: Record<string, string> = { api: 'off' };
    for (let i = 0; i < 20_001; i++) fields[`f${i}`] = '1';
    const res = await boss.post(`/p/${world.code}/api/switch`, fields);
    expect(res.status).to.equal(400);
    expect(res.html).to.include('Form not understood');
    expect((await app.db.knex('studies').where({ code: world.code }).first<{ api_enabled: boolean } | undefined>())?.api_enabled).to.equal(true);
  });

  it('locks a person out after 5 failed sign-ins in a row, the right password included, until the lock is over', async () => {
    const client = new PortalClient(app.baseUrl);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const res = await client.signIn('locked@sdx.test', 'wrong password!');
      expect(res.status, `attempt ${attempt}`).to.equal(401);
      expect(res.html).to.include('The e-mail or the password is wrong');
    }
    const user = present(await app.db.knex('users').where({ email: 'locked@sdx.test' }).first<{ id: number; failed_sign_ins: number; locked_until: Date | null } | undefined>(), 'the locked user');
    expect(user.failed_sign_ins).to.equal(5);
    expect(user.locked_until).to.be.instanceOf(Date);
    const refused = await client.signIn('locked@sdx.test', PASSWORD);
    expect(refused.status).to.equal(401);
    expect(refused.html).to.include('The e-mail or the password is wrong');
    expect(client.cookies.get('sdx_session')).to.be.a('string');
    expect((await client.get('/portal')).status, 'still not signed in').to.equal(303);
    // An unknown e-mail gets the very same answer, so answers do not tell which e-mails exist.
    const unknown = await client.signIn('nobody@sdx.test', PASSWORD);
    expect(unknown.status).to.equal(401);
    expect(unknown.html.replace(/value="[^"]*"/g, '')).to.equal(refused.html.replace(/value="[^"]*"/g, ''));
    // The lock is over (its end moved to the past instead of waiting 15 minutes).
    await app.db.knex('users').where({ id: user.id }).update({ locked_until: app.db.knex.raw("now() - interval '1 second'") });
    const res = await client.signIn('locked@sdx.test', PASSWORD);
    expect(res.status).to.equal(303);
    expect(await app.db.knex('users').where({ id: user.id }).first<Record<string, unknown> | undefined>()).to.include({ failed_sign_ins: 0, locked_until: null });
  });

  it('answers 403 and shows no data to a person without a role in the study', async () => {
    const outsider = await signedIn(app, 'outsider@sdx.test');
    const home = await outsider.get('/portal');
    expect(home.status).to.equal(200);
    expect(home.html).to.include('You hold no role in any study');
    for (const path of [`/p/${world.code}`, `/p/${world.code}/api`, `/p/${world.code}/s/01-001`, '/p/NOSUCH/api', '/p/NOSUCH']) {
      const res = await outsider.get(path);
      expect(res.status, path).to.equal(403);
      expect(res.html).to.include('No access');
      expect(res.html).not.to.match(/City Hospital|Test system|1960|female/);
    }
  });

  it('keeps site staff off the API page and off patients of other sites, with the same answer as for no patient', async () => {
    const staff = await signedIn(app, 'staff01@sdx.test');
    expect((await staff.get(`/p/${world.code}/api`)).status).to.equal(403);
    await staff.get(`/p/${world.code}`);
    const made = await staff.post(`/p/${world.code}/api/keys`, { name: 'Staff key', write: 'on', sites: ['01'], term: '30' });
    expect(made.status).to.equal(403);
    expect(await app.db.knex('api_keys').where({ name: 'Staff key' })).to.have.length(0);
    expect((await staff.post(`/p/${world.code}/api/switch`, { api: 'off' })).status).to.equal(403);
    expect((await staff.post(`/p/${world.code}/api/keys/${world.keyId}/revoke`, {})).status).to.equal(403);
    expect((await app.db.knex('api_keys').where({ id: world.keyId }).first<{ revoked_at: Date | null } | undefined>())?.revoked_at).to.equal(null);

    const list = await staff.get(`/p/${world.code}`);
    expect(list.status).to.equal(200);
    expect(list.html).to.include('01-001').and.not.include('02-001');
    expect((await staff.get(`/p/${world.code}/s/01-001`)).status).to.equal(200);
    const otherSite = await staff.get(`/p/${world.code}/s/02-001`);
    const missing = await staff.get(`/p/${world.code}/s/09-999`);
    expect(otherSite.status).to.equal(403);
    expect(missing.status).to.equal(403);
    const unaddressed = (html: string) => html.replace(/Request id: [0-9a-f-]+/, '').replace(/href="[^"]*\?lang=/g, 'href="?lang=');
    expect(unaddressed(otherSite.html)).to.equal(unaddressed(missing.html));
    expect(otherSite.html).not.to.match(/Regional Clinic|1960|female/);
    expect((await staff.get(`/p/${world.code}/s/02-001/fhir/1`)).status).to.equal(403);
  });

  it('ends the session at sign-out: the same cookie then opens nothing', async () => {
    const boss = await signedIn(app, 'boss@sdx.test');
    const cookie = boss.cookies.get('sdx_session')!;
    await boss.get('/portal');
    const out = await boss.post('/portal/sign-out');
    expect(out.status).to.equal(303);
    expect(out.location).to.equal('/portal/sign-in');
    expect(out.headers.getSetCookie()[0]).to.match(/^sdx_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0$/);
    const replay = new PortalClient(app.baseUrl);
    replay.cookies.set('sdx_session', cookie);
    const res = await replay.get(`/p/${world.code}/api`);
    expect(res.status).to.equal(303);
    expect(res.location).to.match(/^\/portal\/sign-in/);
  });

  it('escapes values from the database and sends a Content-Security-Policy that allows only this service', async () => {
    await makeKey(app.db.knex, { study: world.code, by: world.manager, name: '<script>alert("key")</script>' });
    const boss = await signedIn(app, 'boss@sdx.test');
    const page = await boss.get(`/p/${world.code}/api`);
    expect(page.status).to.equal(200);
    expect(page.html).to.include('&lt;script&gt;alert(&quot;key&quot;)&lt;/script&gt;');
    expect(page.html).not.to.include('<script>alert');
    expect(page.headers.get('content-security-policy')).to.equal("default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'");
    expect(page.headers.get('cache-control')).to.equal('no-store');
    const css = await boss.get('/portal/static/portal.css');
    expect(css.status).to.equal(200);
    expect(css.headers.get('content-type')).to.equal('text/css; charset=utf-8');
    expect((await boss.get('/portal/static/portal.js')).headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect((await boss.get('/portal/static/../../package.json')).status).to.equal(404);
    // Raw output only places a rendered template (the CSRF field, a page in the layout): every value goes through <%= %>.
    for (const file of readdirSync('src/portal/templates')) {
      const raw = [...readFileSync(`src/portal/templates/${file}`, 'utf8').matchAll(/<%~(.*?)%>/g)].map(([, expression = '']) => expression.trim());
      for (const use of raw) expect(use, file).to.match(/^(include\('\.\/\w+', it\)|it\.body)$/);
    }
  });

  it('speaks Russian for lang=ru, remembers it, and has every text in both languages', async () => {
    const client = new PortalClient(app.baseUrl);
    const ru = await client.get('/portal/sign-in?lang=ru');
    expect(ru.html).to.include('<html lang="ru">').and.include('Вход для сотрудников');
    expect((await client.get('/portal/sign-in')).html).to.include('Вход для сотрудников');
    const wrong = await client.post('/portal/sign-in', { email: 'boss@sdx.test', password: 'nope nope nope' });
    expect(wrong.html).to.include('Неверный адрес или пароль');
    expect((await client.get('/portal/sign-in?lang=en')).html).to.include('Staff sign-in');
    expect(Object.keys(portalRu).sort()).to.deep.equal(Object.keys(portalEn).sort());
  });

  it('leaves the API untouched: its answers stay problem+json under the API\'s own policy', async () => {
    const res = await app.call('GET', `/api/v1/studies/${world.code}`, { key: world.key });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-security-policy')).to.equal("default-src 'none'; frame-ancestors 'none'");
    const missing = await app.call('GET', '/api/v1/portal');
    expect(missing.status).to.equal(404);
  });
});
