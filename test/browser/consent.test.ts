import { expect } from 'chai';
import { createStudyWorld, type StudyWorld } from '../helpers/factories.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase } from '../helpers/testDatabase.js';
import { openBrowser, type Browser } from './browser.js';

const NURSE = { email: 'nurse@demo.test', name: 'Nina Nurse' };

/**
 * Consent recorded on the patient card in a real browser (issue 19, point 2): before it the study's
 * consent gate refuses the patient's records; after it the same records call saves them.
 */
describe('consent on the patient card in a browser', () => {
  let app: TestApp;
  let world: StudyWorld;
  let browser: Browser;
  const url = (path: string) => `${app.baseUrl}${path}`;

  before(async () => {
    app = await startTestApp();
    await resetDatabase(app.db.knex);
    world = await createStudyWorld(app.db.knex);
    await addStaff(app.db.knex, NURSE.email, { study: world.code, role: 'site_staff', sites: ['01'] }, NURSE.name);
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
    await app?.close();
  });

  it('records consent given on the card, after which a records call for the patient is saved', async () => {
    const { page } = browser;
    const enrolled = await app.call('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-02' } });
    const subject: string = enrolled.body.subject;
    const records = { records: [{ subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-03-02', sbp: '126', dbp: '79', hr: '66' } }] };
    const before = await app.call('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: records });
    expect(before.body.results[0]).to.deep.include({ status: 'error', code: 'consent_missing' });

    await page.goto(url(`/p/${world.code}/s/${subject}`));
    await page.fill('input[name=email]', NURSE.email);
    await page.fill('input[name=password]', STAFF_PASSWORD);
    await page.click('button[type=submit]:has-text("Sign in")');
    expect(await page.textContent('#consent h2')).to.equal('Record consent');
    await page.check('#consent-form input[name=change][value=given]');
    await page.fill('#consent-form input[name=date]', '2026-02-28');
    await browser.screenshot('20-consent-form');
    await page.click('#consent-form button[type=submit]');
    expect(new URL(page.url()).pathname).to.equal(`/p/${world.code}/s/${subject}`);
    expect(await page.textContent('dl.facts')).to.include('given on 2026-02-28');
    const audit = page.locator('#audit tr', { hasText: 'consent.given' });
    expect(await audit.locator('.author').textContent()).to.equal(NURSE.name);
    await browser.screenshot('21-consent-recorded');

    const after = await app.call('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: records });
    expect(after.status).to.equal(200);
    expect(['ok', 'warn']).to.include(after.body.results[0].status);
  });
});
