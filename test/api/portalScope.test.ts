import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { addSubscription } from '../../src/domain/webhooks/subscriptions.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** Buster Hoeger (Synthea): male, born 1988; enrolled on 2016-12-28 his measurements wait for the site's review. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');

/**
 * What the portal's state-changing forms check besides being signed in, where the other portal files test
 * one form or one refusal each: every form refuses a post without its session's token, and the forms about
 * a patient (consent, the FHIR decision, both of its buttons) are refused to a person none of whose roles
 * covers the patient's site, a manager limited to other sites included, exactly as for no patient.
 */
describe('staff portal: every form checks its token, and a patient\'s forms the person\'s role at the patient\'s site', () => {
  const { app, world } = useStudyWorld();
  let subject: string;
  let review: string;
  let subscriptionId: number;

  const signedIn = async (email: string) => {
    const client = new PortalClient(app.baseUrl);
    expect((await client.signIn(email, STAFF_PASSWORD)).status, `sign-in of ${email}`).to.equal(303);
    return client;
  };

  /** What a refused post must leave as it was: the import, the consent, the keys, the subscription, the switch and the audit trail. */
  const state = async () => ({
    import: (await app.db.knex('fhir_imports').first<{ status: string } | undefined>('status'))?.status,
    consents: Number((await app.db.knex('consents').count<{ n: string }[]>({ n: '*' }))[0]?.n),
    keys: await app.db.knex('api_keys').orderBy('id').select('id', 'revoked_at'),
    subscription: (await app.db.knex('webhook_subscriptions').where({ id: subscriptionId }).first<{ state: string } | undefined>('state'))?.state,
    apiEnabled: (await app.db.knex('studies').where({ code: world.code }).first<{ api_enabled: boolean } | undefined>('api_enabled'))?.api_enabled,
    audit: Number((await app.db.knex('audit_events').count<{ n: string }[]>({ n: '*' }))[0]?.n),
  });

  before(async () => {
    await addStaff(app.db.knex, 'boss@sdx.test', { study: world.code, role: 'manager', canExport: true, unblinded: true });
    await addStaff(app.db.knex, 'staff02@sdx.test', { study: world.code, role: 'site_staff', sites: ['02'], unblinded: true });
    await addStaff(app.db.knex, 'manager02@sdx.test', { study: world.code, role: 'manager', sites: ['02'], canExport: true, unblinded: true });
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    const imported = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}`, {
      key: world.key, raw: BUSTER, contentType: 'application/fhir+json',
    });
    expect(imported.body.status).to.equal('proposed');
    review = new URL(imported.body.review_url).pathname;
    const { subscription } = await inTransaction(app.db.knex, (s) => addSubscription(s, operator, {
      study: world.code, url: 'https://hooks.example.org/sdx', events: ['record.saved'],
    }, { allowInsecure: false }, () => Promise.resolve(['93.184.216.34'])));
    subscriptionId = subscription.id;
  });

  it('refuses every state-changing form posted without its session\'s token with 403, and changes nothing', async () => {
    const boss = await signedIn('boss@sdx.test');
    await boss.get(`/p/${world.code}/api`);
    const before = await state();
    const forms: [string, Record<string, string | string[]>][] = [
      [`/p/${world.code}/s/${subject}/consent`, { change: 'withdrawn_data_use', date: '2017-01-02' }],
      [review, { decision: 'reject', reason: 'forged' }],
      [review, { decision: 'confirm_all' }],
      [`/p/${world.code}/api/keys`, { name: 'Forged', write: 'on', sites: ['01'], term: '30' }],
      [`/p/${world.code}/api/keys/${world.keyId}/revoke`, {}],
      [`/p/${world.code}/api/webhooks`, { url: 'https://forged.example.org/', events: ['record.saved'] }],
      [`/p/${world.code}/api/webhooks/${subscriptionId}/remove`, {}],
      [`/p/${world.code}/api/switch`, { api: 'off', confirm: 'yes' }],
      ['/portal/sign-out', {}],
    ];
    for (const [path, fields] of forms) {
      const res = await boss.post(path, { ...fields, _csrf: null });
      expect(res.status, path).to.equal(403);
      expect(res.html, path).to.include('Form expired');
    }
    expect(await state()).to.deep.equal(before);
    // The session survived the forged sign-out, and its own token still opens the card.
    expect((await boss.get(`/p/${world.code}/s/${subject}`)).status).to.equal(200);
  });

  for (const [who, email] of [['site staff of another site', 'staff02@sdx.test'], ['a manager of another site only', 'manager02@sdx.test']] as const) {
    it(`refuses ${who} the patient's card, consent form, review page and both decisions, as for no patient, changing nothing`, async () => {
      const person = await signedIn(email);
      await person.get(`/p/${world.code}`);
      const before = await state();
      const unaddressed = (html: string) => html.replace(/Request id: [0-9a-f-]+/, '').replace(/href="[^"]*\?lang=/g, 'href="?lang=');
      const posts: [string, Record<string, string>][] = [
        [`/p/${world.code}/s/${subject}/consent`, { change: 'withdrawn_data_use', date: '2017-01-02' }],
        [review, { decision: 'reject', reason: 'not my site' }],
        [review, { decision: 'confirm_all' }],
      ];
      for (const [path, fields] of posts) {
        const res = await person.post(path, fields);
        // The same form for a patient that does not exist, whose number the refusal names in the same place.
        const missing = await person.post(path.replace(`/s/${subject}/`, '/s/09-999/'), fields);
        expect([res.status, missing.status], path).to.deep.equal([403, 403]);
        expect(unaddressed(res.html).replace(subject, '09-999'), `${path} answers as for no patient`).to.equal(unaddressed(missing.html));
      }
      for (const path of [`/p/${world.code}/s/${subject}`, review]) expect((await person.get(path)).status, path).to.equal(403);
      expect(await state()).to.deep.equal(before);
    });
  }

  it('lets a manager of another site only make no key for the patient\'s site', async () => {
    const manager = await signedIn('manager02@sdx.test');
    expect((await manager.get(`/p/${world.code}/api`)).status).to.equal(200);
    const refused = await manager.post(`/p/${world.code}/api/keys`, { name: 'Reaching over', write: 'on', read: 'on', sites: ['01'], term: '30' });
    expect(refused.status).to.equal(422);
    expect(await app.db.knex('api_keys').where({ name: 'Reaching over' })).to.have.length(0);
    const made = await manager.post(`/p/${world.code}/api/keys`, { name: 'Own site', write: 'on', read: 'on', sites: ['02'], term: '30' });
    expect(made.status).to.equal(201);
    const key = present(/id="key-value" readonly value="([^"]+)"/.exec(made.html)?.[1], 'the key value');
    const read = await app.call<AnswerOf<'listPatients', 200>>('GET', `/api/v1/studies/${world.code}/patients?subject=${subject}`, { key });
    expect(read.body.patients).to.deep.equal([]);
  });
});
