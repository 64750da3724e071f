import { expect } from 'chai';
import { giveConsent } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** The row of the keys table for a key id, as text without tags. */
function keyRow(page: PortalReply, id: number): string {
  const row = new RegExp(`<tr data-key-id="${id}"[^>]*>([\\s\\S]*?)</tr>`).exec(page.html);
  expect(row, `key ${id} is in the keys table`).to.not.equal(null);
  return present(row?.[1], `the row of key ${id}`).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}


/** The columns of a webhook subscription the page test reads. */
interface SubscriptionRow { id: number; state: string; unblinded: boolean; secret: string; event_types: string[] }

describe('staff portal: the study\'s API page', () => {
  const { app, world } = useStudyWorld();
  let manager: PortalClient;
  let managerName: string;
  const stateOf = async (id: number) => present(await app.db.knex('webhook_subscriptions').where({ id }).first<SubscriptionRow | undefined>(), `subscription ${id}`).state;

  before(async () => {
    managerName = 'Dana Manager';
    await addStaff(app.db.knex, 'dana@sdx.test', { study: world.code, role: 'manager', canExport: true }, managerName);
    await addStaff(app.db.knex, 'noexport@sdx.test', { study: world.code, role: 'manager', canExport: false });
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('dana@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'male', birth_year: 1955, enrolled_on: '2026-02-01' } });
    await giveConsent(app.db.knex, world.code, enrolled.body.subject);
  });

  it('makes a key from the form and shows its value once, with a warning and a copy button; the value works against the API', async () => {
    const page = await manager.get(`/p/${world.code}/api`);
    expect(page.status).to.equal(200);
    expect(page.html).to.include('Make a key').and.include('The API is on');
    const made = await manager.post(`/p/${world.code}/api/keys`, { name: 'Hospital LIMS', read: 'on', write: 'on', enrol: 'on', sites: ['01'], term: '30' });
    expect(made.status).to.equal(201);
    const value = /id="key-value" readonly value="(sdx_[0-9A-Za-z]{49})"/.exec(made.html)?.[1];
    expect(value, 'the key value is on the page').to.be.a('string');
    expect(made.html).to.include('It will not be shown again').and.include('id="copy-key"').and.include('Key &quot;Hospital LIMS&quot; for sites 01');
    expect(made.headers.get('cache-control')).to.equal('no-store');

    const design = await app.call<AnswerOf<'getStudyDesign', 200>>('GET', `/api/v1/studies/${world.code}`, { key: value });
    expect(design.status).to.equal(200);
    expect(design.body.sites.map((s) => s.number)).to.deep.equal(['01']);
    const records = await app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients?site=01`, { key: value });
    expect(records.status).to.equal(200);
    expect(records.body.patients).to.have.length(1);

    const key = present(await app.db.knex('api_keys').where({ name: 'Hospital LIMS' }).first<{ id: number } & Record<string, unknown> | undefined>(), 'the key made');
    expect(key).to.include({ can_read: true, can_write: true, can_enrol: true, term_days: 30, request_count: 2, rows_read: 1 });
    expect(JSON.stringify(key)).not.to.include(value!);
    const audit = present(await app.db.knex('audit_events').where({ action: 'api_key.created' }).orderBy('id', 'desc')
      .first<{ details: Record<string, unknown> } & Record<string, unknown> | undefined>(), 'the audit row');
    expect(audit).to.include({ author: managerName, reason: 'Entered in the portal', actor_type: 'user' });
    expect(audit.details).to.include({ key_id: key.id, name: 'Hospital LIMS', read: true, write: true, enrol: true, term_days: 30 });

    const after = await manager.get(`/p/${world.code}/api`);
    expect(after.html, 'the value is never shown again').not.to.include(value!);
    const row = keyRow(after, key.id);
    expect(row).to.match(/^Hospital LIMS sdx_\w{6}… active read, write, enrol patients 01 Dana Manager/);
    expect(row).to.match(/ \d{4}-\d\d-\d\d \d\d:\d\d UTC 2 1 Revoke…$/);
    const reads = present(/<table class="grid" id="reads">([\s\S]*?)<\/table>/.exec(after.html)?.[1], 'the reads table').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    expect(reads).to.match(/\d\d:\d\d UTC Hospital LIMS GET \/api\/v1\/studies\/DEMO\/patients site=01 limit=500 1 $/);
  });

  it('sends a refused form back filled in, with the reason, and makes no key', async () => {
    const noSites = await manager.post(`/p/${world.code}/api/keys`, { name: 'No sites', write: 'on', term: '90' });
    expect(noSites.status).to.equal(422);
    expect(noSites.html).to.include('A key needs at least one site.').and.include('value="No sites"');
    const noRights = await manager.post(`/p/${world.code}/api/keys`, { name: 'No rights', sites: ['01'], term: '90' });
    expect(noRights.status).to.equal(422);
    expect(noRights.html).to.include('A key needs the read right, the write right or both.');
    const badTerm = await manager.post(`/p/${world.code}/api/keys`, { name: 'Bad term', write: 'on', sites: ['01'], term: '31' });
    expect(badTerm.status).to.equal(422);
    expect(badTerm.html).to.include('A key term is 30, 90 or 365 days, not 31.');
    const badSite = await manager.post(`/p/${world.code}/api/keys`, { name: 'Bad site', write: 'on', sites: ['77'], term: '30' });
    expect(badSite.status).to.equal(422);
    expect(badSite.html).to.include('Site &quot;77&quot; is not one of the sites this person may see.');

    const noExport = new PortalClient(app.baseUrl);
    await noExport.signIn('noexport@sdx.test', STAFF_PASSWORD);
    const page = await noExport.get(`/p/${world.code}/api`);
    expect(page.html).to.include('Only a manager who may export data can make a key with the read right.');
    const refused = await noExport.post(`/p/${world.code}/api/keys`, { name: 'Reader', read: 'on', sites: ['01', '02'], term: '30' });
    expect(refused.status).to.equal(403);
    expect(refused.html).to.include('Only a manager who may export data can make a key with the read right; noexport@sdx.test may not.');
    expect(await app.db.knex('api_keys').whereIn('name', ['No sites', 'No rights', 'Bad term', 'Bad site', 'Reader'])).to.have.length(0);
  });

  it('revokes a key after a confirmation: the key then gets 401 and the revocation is audited', async () => {
    const made = await manager.post(`/p/${world.code}/api/keys`, { name: 'Short-lived', write: 'on', sites: ['01', '02'], term: '90' });
    const value = /id="key-value" readonly value="([^"]+)"/.exec(made.html)![1];
    const { id } = present(await app.db.knex('api_keys').where({ name: 'Short-lived' }).first<{ id: number } | undefined>('id'), 'the key');
    const confirm = await manager.get(`/p/${world.code}/api/keys/${id}/revoke`);
    expect(confirm.status).to.equal(200);
    expect(confirm.html).to.include('Revoke key &quot;Short-lived&quot;').and.include('id="confirm-revoke"');
    expect((await app.call('GET', `/api/v1/studies/${world.code}`, { key: value })).status, 'not revoked by looking').to.equal(200);

    const done = await manager.post(`/p/${world.code}/api/keys/${id}/revoke`);
    expect(done.status).to.equal(303);
    expect(done.location).to.equal(`/p/${world.code}/api?revoked=${id}`);
    const page = await manager.get(done.location!);
    expect(page.html).to.include(`Key ${id} is revoked`);
    expect(keyRow(page, id)).to.match(/ revoked /).and.not.match(/Revoke…/);
    const refused = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { key: value });
    expect(refused.status).to.equal(401);
    expect(refused.body.code).to.equal('key_revoked');
    const audit = present(await app.db.knex('audit_events').where({ action: 'api_key.revoked' })
      .first<{ details: Record<string, unknown> } & Record<string, unknown> | undefined>(), 'the audit row');
    expect(audit).to.include({ author: managerName, reason: 'Entered in the portal' });
    expect(audit.details).to.deep.equal({ key_id: id, name: 'Short-lived' });

    const again = await manager.post(`/p/${world.code}/api/keys/${id}/revoke`);
    expect(again.status).to.equal(409);
    expect(again.html).to.include(`API key ${id} is already revoked.`);
    expect((await manager.get(`/p/${world.code}/api/keys/99999/revoke`)).status).to.equal(404);
  });

  it('switches the API of the study off and on: keys then get 403, and each switch is audited', async () => {
    // Off is dangerous: a red button behind a box to tick; on is an ordinary button.
    const before = await manager.get(`/p/${world.code}/api`);
    expect(before.html).to.match(/<input type="checkbox" name="confirm" value="yes" required> Every key of this study gets 403/)
      .and.match(/<button type="submit" id="api-switch" class="danger">Turn the API off<\/button>/);
    const unconfirmed = await manager.post(`/p/${world.code}/api/switch`, { api: 'off' });
    expect(unconfirmed.status, 'off without the box ticked').to.equal(400);
    expect(unconfirmed.html).to.include('The API is still on: tick the box');
    expect((await app.call('GET', `/api/v1/studies/${world.code}`, { key: world.key })).status).to.equal(200);
    const off = await manager.post(`/p/${world.code}/api/switch`, { api: 'off', confirm: 'yes' });
    expect(off.status).to.equal(303);
    const page = await manager.get(`/p/${world.code}/api`);
    expect(page.html).to.include('The API is off').and.include('<button type="submit" id="api-switch">Turn the API on</button>').and.not.include('name="confirm"');
    const refused = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { key: world.key });
    expect(refused.status).to.equal(403);
    expect(refused.body.code).to.equal('api_disabled');
    expect((await manager.post(`/p/${world.code}/api/switch`, { api: 'on' })).status).to.equal(303);
    expect((await app.call('GET', `/api/v1/studies/${world.code}`, { key: world.key })).status).to.equal(200);
    const audit = await app.db.knex('audit_events').where({ action: 'study.settings_changed' }).orderBy('id').select('author', 'field_code', 'old_value', 'new_value');
    expect(audit).to.deep.equal([
      { author: managerName, field_code: 'apiEnabled', old_value: 'true', new_value: 'false' },
      { author: managerName, field_code: 'apiEnabled', old_value: 'false', new_value: 'true' },
    ]);
  });

  it('shows the page in Russian', async () => {
    const page = await manager.get(`/p/${world.code}/api?lang=ru`);
    expect(page.html).to.include('Создать ключ').and.include('Последние чтения').and.include('действует');
    await manager.get(`/p/${world.code}/api?lang=en`);
  });

  it('subscribes an address to events (its secret shown once), lists it with its state, shows failing ones with a re-enable button, and removes it', async () => {
    const refused = await manager.post(`/p/${world.code}/api/webhooks`, { url: 'http://hooks.example.org/in', events: ['record.saved'] });
    expect(refused.status).to.equal(422);
    expect(refused.html).to.include('id="webhook-error"').and.include('value="http://hooks.example.org/in"');
    const made = await manager.post(`/p/${world.code}/api/webhooks`, { url: 'https://8.8.8.8/in', events: ['record.saved', 'query.opened'] });
    expect(made.status).to.equal(201);
    const secret = /id="webhook-secret" readonly value="(whsec_[A-Za-z0-9+/=]+)"/.exec(made.html)?.[1];
    expect(secret, 'the secret is on the page').to.be.a('string');
    expect(made.headers.get('cache-control')).to.equal('no-store');
    const row = present(await app.db.knex('webhook_subscriptions').where({ url: 'https://8.8.8.8/in' }).first<SubscriptionRow | undefined>(), 'the subscription row');
    expect(row).to.include({ state: 'active', unblinded: false, secret });
    expect(row.event_types).to.deep.equal(['record.saved', 'query.opened']);

    const page = await manager.get(`/p/${world.code}/api`);
    expect(page.html).to.include(`data-subscription-id="${row.id}"`).and.include('record.saved, query.opened').and.not.include(secret!);
    await app.db.knex('webhook_subscriptions').where({ id: row.id }).update({ state: 'failing' });
    const failing = await manager.get(`/p/${world.code}/api`);
    expect(failing.html).to.include('failing: a day of failed deliveries').and.include(`/webhooks/${row.id}/enable`);
    expect((await manager.post(`/p/${world.code}/api/webhooks/${row.id}/enable`, {})).status).to.equal(303);
    expect(await stateOf(row.id)).to.equal('active');
    expect((await manager.post(`/p/${world.code}/api/webhooks/${row.id}/remove`, {})).status).to.equal(303);
    expect(await stateOf(row.id)).to.equal('removed');
    expect((await manager.get(`/p/${world.code}/api`)).html).not.to.include(`data-subscription-id="${row.id}"`);
    const audit = await app.db.knex('audit_events').where('action', 'like', 'webhook.%').orderBy('id').select('action', 'author');
    expect(audit).to.deep.equal([
      { action: 'webhook.subscribed', author: managerName }, { action: 'webhook.enabled', author: managerName }, { action: 'webhook.removed', author: managerName },
    ]);
  });

  it('names to a manager of some sites only the patients of those sites that reads asked for, never a patient of another site', async () => {
    const site02 = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '02', sex: 'female', birth_year: 1962, enrolled_on: '2026-02-01' } });
    const site01 = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1963, enrolled_on: '2026-02-01' } });
    const [other, own] = [site02.body.subject, site01.body.subject];
    expect(other).to.match(/^02-/);
    // A key of every site reads the patient of site 02, then one of site 01, by their numbers.
    for (const subject of [other, own]) expect((await app.call('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key })).status).to.equal(200);
    await addStaff(app.db.knex, 'site01-manager@sdx.test', { study: world.code, role: 'manager', canExport: true, sites: ['01'] });
    const siteManager = new PortalClient(app.baseUrl);
    expect((await siteManager.signIn('site01-manager@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
    // The manager of site 01 may not open the card of site 02's patient: the page of reads must not name them either.
    expect((await siteManager.get(`/p/${world.code}/s/${other}`)).status).to.equal(403);
    const reads = (html: string) => present(/<table class="grid" id="reads">([\s\S]*?)<\/table>/.exec(html)?.[1], 'the reads table').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    const seen = reads((await siteManager.get(`/p/${world.code}/api`)).html);
    expect(seen).to.not.include(other);
    expect(seen).to.include(`subject=${own}`).and.include('subject=…');
    // A manager of every site still sees both.
    expect(reads((await manager.get(`/p/${world.code}/api`)).html)).to.include(`subject=${other}`).and.include(`subject=${own}`);
  });

  it('lists each read under the call that made it, the exports and the FHIR reads included', async () => {
    const base = `/api/v1/studies/${world.code}`;
    for (const path of ['/datasets', '/datasets/VS', '/odm?content=metadata', '/fhir', '/audit?limit=1']) expect((await app.call('GET', `${base}${path}`, { key: world.key })).status, path).to.equal(200);
    const page = await manager.get(`/p/${world.code}/api`);
    const calls = [...page.html.matchAll(/<code>(GET [^<]*)<\/code>/g)].map((m) => m[1]).slice(0, 5);
    expect(calls).to.deep.equal([`GET ${base}/audit`, `GET ${base}/fhir`, `GET ${base}/odm`, `GET ${base}/datasets/VS`, `GET ${base}/datasets`]);
  });
});
