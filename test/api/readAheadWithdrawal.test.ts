import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { READ_AHEAD_MS } from '../../src/db/readAhead.js';
import { inTransaction, type AllStores } from '../../src/db/stores.js';
import { createStudyWorld, giveConsent, operator, type StudyWorld } from '../helpers/factories.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase } from '../helpers/testDatabase.js';

/**
 * The read-ahead (src/db/readAhead.ts) reads a paging run's next page while the client takes in the current
 * one, and may serve it up to 2 s later. A patient who withdrew consent to data use before the next page was
 * asked for must not be in it (issue 21.11), whoever recorded the withdrawal: here the test's own
 * connection, as another service process or the portal would.
 */
describe('read-ahead and a withdrawal of consent to data use', function () {
  this.timeout(60_000);
  let app: TestApp;
  let world: StudyWorld;

  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  /** A fresh study with three patients with consent and one vital-signs form each, in enrolment order. */
  async function threePatients(): Promise<string[]> {
    await resetDatabase(app.db.knex);
    world = await createStudyWorld(app.db.knex);
    const subjects: string[] = [];
    for (const birthYear of [1961, 1962, 1963]) {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: birthYear, enrolled_on: '2026-01-05' } });
      subjects.push(enrolled.body.subject);
      await giveConsent(app.db.knex, world.code, enrolled.body.subject, '2026-01-01');
    }
    const saved = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key,
      body: { records: subjects.map((subject) => ({ subject, visit: 'unscheduled', form: 'vs', instance: 1, values: { vsdate: '2026-01-10', sbp: '120', dbp: '80', hr: '70' } })) },
    });
    expect(saved.body.counts.ok).to.equal(3);
    return subjects;
  }

  /** Records the patient's withdrawal of consent to data use in a transaction of its own, over the stores as `adapt` gives them. */
  function withdraw(subject: string, adapt = (stores: AllStores) => stores): Promise<unknown> {
    return inTransaction(app.db.knex, (stores) => recordConsent(adapt(stores), operator, { study: world.code, subject, change: { withdrawn: '2026-01-20', dataUse: true } }));
  }

  /**
   * Starts the patient's withdrawal and holds its transaction open, its removal row inserted (and its id taken),
   * as a slow statement or a busy server would, until `commit` is called.
   */
  async function withdrawalHeldOpen(subject: string): Promise<{ commit: () => Promise<unknown> }> {
    let removalInserted!: () => void;
    const inserted = new Promise<void>((resolve) => { removalInserted = resolve; });
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    // Publishing the withdrawal's event is its last step, after the removal row.
    const done = withdraw(subject, (stores) => ({
      ...stores, webhooks: { ...stores.webhooks, publish: async (events) => { removalInserted(); await released; await stores.webhooks.publish(events); } },
    }));
    await Promise.race([inserted, done]);
    return { commit: () => { release(); return done; } };
  }

  /** A page of either read call: its rows under the call's name. */
  type Page = { next: string | null } & Partial<Record<'patients' | 'records', { subject: string }[]>>;

  for (const operation of ['patients', 'records'] as const) {
    it(`leaves a patient who withdrew after the first page out of the next page of ${operation}, though it was read ahead`, async () => {
      const [first, other] = await threePatients();
      const second = present(other, 'the second patient');
      const page1 = await app.call<Page>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1`, { key: world.key });
      const answered = Date.now();
      expect(page1.body[operation]?.map((row) => row.subject)).to.deep.equal([first]);
      // The next page, holding the second patient, is read ahead as the first is answered; give its query time to finish.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await withdraw(second);

      // Asked while the page read ahead may still be served, or the test would prove nothing.
      expect(Date.now() - answered, 'ms from the first page to the request for the next').to.be.below(READ_AHEAD_MS);
      const page2 = await app.call<Page>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1&after=${present(page1.body.next, 'the next token')}`, { key: world.key });
      expect(page2.status).to.equal(200);
      expect(page2.body[operation]?.map((row) => row.subject)).to.not.include(second);
    });

    it(`leaves out of the next page of ${operation} a patient whose withdrawal committed after one numbered later, though it was read ahead`, async () => {
      const [first, other, last] = await threePatients();
      const [second, third] = [present(other, 'the second patient'), present(last, 'the third patient')];
      // The second patient's withdrawal takes the lower removal id but commits after the third's.
      const secondWithdrawal = await withdrawalHeldOpen(second);
      await withdraw(third);
      const page1 = await app.call<Page>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1`, { key: world.key });
      const answered = Date.now();
      expect(page1.body[operation]?.map((row) => row.subject)).to.deep.equal([first]);
      // The next page, holding the second patient, is read ahead as the first is answered; give its query time to finish.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await secondWithdrawal.commit();

      expect(Date.now() - answered, 'ms from the first page to the request for the next').to.be.below(READ_AHEAD_MS);
      const page2 = await app.call<Page>('GET', `/api/v1/studies/${world.code}/${operation}?limit=1&after=${present(page1.body.next, 'the next token')}`, { key: world.key });
      expect(page2.status).to.equal(200);
      expect(page2.body[operation]?.map((row) => row.subject)).to.not.include(second);
    });
  }
});
