import { expect } from 'chai';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { grantRole } from '../../src/domain/people/roles.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import type { StudySettings } from '../../src/domain/stores.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { addPerson, giveConsent, makeKey, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { slowPostOnceCounted, requestsOf as requestsCounted, type Exchange } from '../helpers/slowPost.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** Dated inside week 4's window of a patient enrolled on 2026-01-06. */
const VITALS = { vsdate: '2026-02-03', sbp: '120', dbp: '80', hr: '70' };

describe('a key\'s state and reach when they change while its request\'s body is still arriving', () => {
  const { app, world } = useStudyWorld();
  let subject: string;

  /** Each test writes for a patient of its own (site 01, consent given), so that its write would save a new form. */
  beforeEach(async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-01-06' },
    });
    subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
  });

  const requestsOf = (keyId: number) => requestsCounted(app.db.knex, keyId);

  /** Starts a records call for the patient's week 4 vital signs, and resolves once the service has looked its key up. */
  function startRecords(key: { key: string; id: number }): Promise<{ finish: () => Promise<Exchange>; countedBefore: number }> {
    const body = JSON.stringify({ records: [{ subject, visit: 'week4', form: 'vs', values: VITALS }] });
    return slowPostOnceCounted(app.db.knex, app.baseUrl, `/api/v1/studies/${world.code}/records`, key, body);
  }

  const savedVitals = async () => app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').join('forms as f', 'f.id', 'r.form_id')
    .where({ 'p.subject': subject, 'f.code': 'vs' }).count<{ n: string }[]>({ n: '*' }).then(([row]) => Number(row?.n ?? 0));

  async function expectProblem(exchange: Exchange, status: number, code: string): Promise<void> {
    expect(exchange.status, exchange.body).to.equal(status);
    const problem = JSON.parse(exchange.body) as Problem;
    expect(problem.code).to.equal(code);
    await assertMatchesSpec('submitFormRecords', status, present(exchange.headers['content-type'], 'the Content-Type'), problem);
  }

  it('refuses with 401 key_revoked, saving nothing, a write whose key was revoked before its body had arrived', async () => {
    const made = await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Revoked mid-upload' });
    const upload = await startRecords(made);
    await inTransaction(app.db.knex, (s) => revokeApiKey(s, { study: world.code, keyId: made.id, by: world.manager, via: 'cli' }));
    await expectProblem(await upload.finish(), 401, 'key_revoked');
    expect(await savedVitals()).to.equal(0);
    // A request refused with 401 is not counted (spec, Rate limit), wherever it was refused.
    expect(await requestsOf(made.id)).to.equal(upload.countedBefore);
  });

  it('reaches no site its maker lost before the body had arrived: the patient is unknown to the write', async () => {
    await addPerson(app.db.knex, world.code, 'narrowed-mid-upload@sdx.test', { role: 'manager', canExport: true });
    const made = await makeKey(app.db.knex, { study: world.code, by: 'narrowed-mid-upload@sdx.test', name: 'Narrowed mid-upload' });
    const upload = await startRecords(made);
    await inTransaction(app.db.knex, (s) => grantRole(s, operator, {
      study: world.code, email: 'narrowed-mid-upload@sdx.test', role: 'manager', canExport: true, unblinded: false, sites: ['02'],
    }));
    const exchange = await upload.finish();
    expect(exchange.status).to.equal(200);
    const result = JSON.parse(exchange.body) as AnswerOf<'submitFormRecords', 200>;
    await assertMatchesSpec('submitFormRecords', 200, present(exchange.headers['content-type'], 'the Content-Type'), result);
    expect(result.results.map((r) => [r.status, r.code])).to.deep.equal([['error', 'unknown_subject']]);
    expect(await savedVitals()).to.equal(0);
  });

  const studyChanges: { status: number; code: string; change: StudySettings; undo: StudySettings; what: string }[] = [
    { status: 403, code: 'api_disabled', change: { apiEnabled: false }, undo: { apiEnabled: true }, what: 'whose API was switched off' },
    { status: 423, code: 'study_locked', change: { locked: true }, undo: { locked: false }, what: 'locked' },
  ];
  for (const c of studyChanges) {
    it(`refuses with ${c.status} ${c.code}, saving nothing, a write to a study ${c.what} before its body had arrived`, async () => {
      const upload = await startRecords({ key: world.key, id: world.keyId });
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, c.change));
      try {
        await expectProblem(await upload.finish(), c.status, c.code);
        expect(await savedVitals()).to.equal(0);
      } finally {
        await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, c.undo));
      }
    });
  }
});
