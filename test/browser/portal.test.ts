import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { createStudyWorld, giveConsent, type StudyWorld } from '../helpers/factories.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase } from '../helpers/testDatabase.js';
import { openBrowser, type Browser } from './browser.js';

type Item = AnswerOf<'importFhirRecord', 201>['items'][number];

const MANAGER = { email: 'manager@demo.test', name: 'Dana Manager' };

/**
 * The staff portal in a real browser (headless Debian Chromium driven by playwright-core): sign-in,
 * a key made on the API page that works against the API and fails once revoked, and a FHIR import
 * confirmed item by item on its review page, its values then read back through the API, and consent
 * recorded on a patient card, after which the patient's records are saved. Each page
 * visited is saved as a screenshot under test-output/screenshots/.
 */
describe('staff portal in a browser', () => {
  let app: TestApp;
  let world: StudyWorld;
  let browser: Browser;
  const url = (path: string) => `${app.baseUrl}${path}`;

  before(async () => {
    app = await startTestApp();
    await resetDatabase(app.db.knex);
    world = await createStudyWorld(app.db.knex);
    await addStaff(app.db.knex, MANAGER.email, { study: world.code, role: 'manager', canExport: true, unblinded: true }, MANAGER.name);
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
    await app?.close();
  });

  it('sends the manager to sign in, then to the API page asked for', async () => {
    const { page } = browser;
    await page.goto(url(`/p/${world.code}/api`));
    expect(new URL(page.url()).pathname).to.equal('/portal/sign-in');
    await browser.screenshot('01-sign-in');
    await page.fill('input[name=email]', MANAGER.email);
    await page.fill('input[name=password]', 'not the password');
    await page.click('button[type=submit]:has-text("Sign in")');
    expect(await page.textContent('.error')).to.include('The e-mail or the password is wrong');
    await browser.screenshot('02-sign-in-refused');
    await page.fill('input[name=password]', STAFF_PASSWORD);
    await page.click('button[type=submit]:has-text("Sign in")');
    expect(new URL(page.url()).pathname).to.equal(`/p/${world.code}/api`);
    expect(await page.textContent('h1')).to.equal(`API — ${world.code}`);
    const [cookie] = await browser.context.cookies();
    expect(cookie).to.include({ name: 'sdx_session', httpOnly: true, sameSite: 'Lax' });
    await browser.screenshot('03-api-page');
  });

  it('makes a key on the API page: its value, shown once, works against the API and its requests are counted; revoked, it fails', async () => {
    const { page } = browser;
    await page.fill('#create-key input[name=name]', 'Ward LIMS');
    await page.check('#create-key input[name=read]');
    await page.check('#create-key input[name=write]');
    await page.check('#create-key input[name=enrol]');
    await page.uncheck('#create-key input[name=sites][value="02"]');
    await page.check('#create-key input[name=term][value="30"]');
    await page.click('#create-key button[type=submit]');
    expect(await page.textContent('h1')).to.equal('Key made');
    expect(await page.textContent('.warning')).to.include('It will not be shown again');
    const value = await page.inputValue('#key-value');
    expect(value).to.match(/^sdx_[0-9A-Za-z]{49}$/);
    await page.click('#copy-key');
    // The clipboard write is a promise: the label changes when it settles, a moment after the click.
    await page.waitForSelector('#copy-key:text-is("Copied")', { timeout: 5000 });
    await browser.screenshot('04-key-made');

    for (let i = 0; i < 3; i++) {
      const res = await app.call<AnswerOf<'getStudyDesign', 200>>('GET', `/api/v1/studies/${world.code}`, { key: value });
      expect(res.status).to.equal(200);
      expect(res.body.sites.map((s) => s.number)).to.deep.equal(['01']);
    }
    const read = await app.call('GET', `/api/v1/studies/${world.code}/patients`, { key: value });
    expect(read.status).to.equal(200);

    await page.click('text=Back to the API page');
    const row = page.locator('#keys tr', { hasText: 'Ward LIMS' });
    expect((await row.locator('.key-state').textContent())!.trim()).to.equal('active');
    expect(await row.locator('.requests').textContent()).to.equal('4');
    expect(await row.locator('.last-used').textContent()).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(await page.locator('#reads').textContent()).to.include('Ward LIMS');
    expect(await page.content()).not.to.include(value);
    await browser.screenshot('05-keys-table');

    await row.locator('a:has-text("Revoke")').click();
    expect(await page.textContent('h1')).to.equal('Revoke a key');
    await browser.screenshot('06-revoke-confirmation');
    await page.click('#confirm-revoke');
    expect(await page.textContent('.notice')).to.match(/Key \d+ is revoked/);
    expect((await page.locator('#keys tr', { hasText: 'Ward LIMS' }).locator('.key-state').textContent())!.trim()).to.equal('revoked');
    await browser.screenshot('07-key-revoked');
    const refused = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { key: value });
    expect(refused.status).to.equal(401);
    expect(refused.body.code).to.equal('key_revoked');
  });

  it('confirms a FHIR import on its review page item by item; the API then reads the values back, the confirming person in the audit trail', async () => {
    const { page } = browser;
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '80', hr: '70' } }] },
    });
    expect(saved.body.counts.ok).to.equal(1);
    const fhir = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');
    const proposed = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}`, { key: world.key, raw: fhir, contentType: 'application/fhir+json' });
    expect(proposed.status).to.equal(201);
    const items: Item[] = proposed.body.items;
    const position = (form: string, field: string) => items.findIndex((i) => i.visit === 'screening' && i.form === form && i.field === field && i.state !== 'skipped');

    await page.goto(url(new URL(proposed.body.review_url).pathname));
    expect(await page.textContent('h1')).to.equal(`FHIR import No. 1 of patient ${subject}`);
    const sbp = position('vs', 'sbp');
    expect(await page.getAttribute(`tr[data-position="${sbp}"]`, 'class')).to.equal('item conflict');
    expect(await page.textContent(`tr[data-position="${sbp}"] .badge.conflict`)).to.equal('conflict');
    await browser.screenshot('08-fhir-review');

    // Item by item: the new vital signs and demographics values, and "replace" for the conflicting systolic pressure.
    const chosen = ['vs', 'dm'].flatMap((form) => items.flatMap((i, p) => (i.visit === 'screening' && i.form === form && i.state === 'new' ? [p] : [])));
    expect(chosen.map((p) => items[p]?.field)).to.have.members(['weight', 'height', 'weight']);
    for (const p of chosen) await page.check(`#take_${p}`);
    await page.check(`input[name=conflict_${sbp}][value=replace]`);
    await browser.screenshot('09-fhir-review-chosen');
    await page.click('#confirm-chosen');
    expect(await page.getAttribute('#import-status', 'data-status')).to.equal('confirmed');
    expect(await page.textContent('#import-status')).to.include(`by ${MANAGER.name}`);
    for (const p of [...chosen, sbp]) expect(await page.getAttribute(`tr[data-position="${p}"]`, 'data-state')).to.equal('saved');
    expect(await page.locator('#confirm-chosen').count(), 'a decided import offers no second confirmation').to.equal(0);
    await browser.screenshot('10-fhir-confirmed');

    const records = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}&visit=screening`, { key: world.key });
    expect(records.status).to.equal(200);
    const byForm = Object.fromEntries(records.body.records.map((r) => [r.form, r]));
    expect(byForm.vs?.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '136', dbp: '80', hr: '70', weight: '81.0' });
    expect(byForm.dm).to.deep.include({ status: 'draft', source: 'fhir', values: { height: '185.8', weight: '81.0' } });
    expect(byForm.lab_hem, 'values not chosen are not saved').to.equal(undefined);
    const trail = await app.db.knex('audit_events as a').join('patients as p', 'p.id', 'a.patient_id')
      .where({ 'p.subject': subject, 'a.field_code': 'sbp', 'a.action': 'record.value_changed' }).first<{ author: string; old_value: string | null; new_value: string | null } | undefined>('a.author', 'a.old_value', 'a.new_value');
    expect(trail).to.deep.equal({ author: MANAGER.name, old_value: '140', new_value: '136' });

    await page.click(`text=Card of patient ${subject}`);
    const audit = page.locator('#audit tr[data-action="record.value_changed"]', { hasText: 'sbp' });
    expect(await audit.locator('.author').textContent()).to.equal(MANAGER.name);
    expect(await audit.locator('.audit-value').allTextContents(), 'old and new value with the unit as people write it').to.deep.equal(['140 mmHg', '136 mmHg']);
    expect(await audit.textContent()).to.include('Value changed');
    expect(await page.locator('#fhir-imports').textContent()).to.include('confirmed');
    await browser.screenshot('11-patient-card');
  });

  it('records consent on the patient card, after which a records call for the patient is saved (issue 19, point 2)', async () => {
    const { page } = browser;
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-02' } });
    const subject: string = enrolled.body.subject;
    const records = { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-02-16', sbp: '126', dbp: '79', hr: '66' } }] };
    const refused = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: records });
    expect(refused.body.results[0]).to.deep.include({ status: 'error', code: 'consent_missing' });

    await page.goto(url(`/p/${world.code}/s/${subject}`));
    expect(await page.textContent('#consent h2')).to.equal('Record consent');
    await page.check('#consent-form input[name=change][value=given]');
    await page.fill('#consent-form input[name=date]', '2026-02-10');
    await browser.screenshot('14-consent-form');
    await page.click('#consent-form button[type=submit]');
    expect(new URL(page.url()).pathname).to.equal(`/p/${world.code}/s/${subject}`);
    expect(await page.textContent('dl.facts')).to.include('given on 2026-02-10');
    expect(await page.locator('#audit tr', { hasText: /consent\.given|Consent given/ }).locator('.author').textContent()).to.equal(MANAGER.name);
    await browser.screenshot('15-consent-recorded');

    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: records });
    expect(saved.status).to.equal(200);
    expect(['ok', 'warn']).to.include(saved.body.results[0]?.status);
  });

  it('shows the pages in Russian and signs out', async () => {
    const { page } = browser;
    await page.goto(url(`/p/${world.code}/api?lang=ru`));
    expect(await page.textContent('h2 >> nth=0')).to.equal('API исследования');
    await browser.screenshot('12-api-page-ru');
    await page.goto(url(`/p/${world.code}?lang=en`));
    await browser.screenshot('13-patients');
    await page.click('text=Sign out');
    expect(new URL(page.url()).pathname).to.equal('/portal/sign-in');
    await page.goto(url(`/p/${world.code}/api`));
    expect(new URL(page.url()).pathname).to.equal('/portal/sign-in');
  });
});
