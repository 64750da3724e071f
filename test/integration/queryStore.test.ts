import { expect } from 'chai';
import { createStores, inTransaction } from '../../src/db/stores.js';
import type { Database } from '../../src/db/knex.js';
import { createStudyWorld } from '../helpers/factories.js';
import { at, only } from '../helpers/only.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

/** src/db/queries.ts on PostgreSQL (issue 22.2): the thread, the closing, and steps on one query applied one after the other. */
describe('src/db/queries.ts on PostgreSQL', () => {
  let db: Database;
  let studyId: number;
  let queryId: number;

  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    await createStudyWorld(db.knex);
    const stores = createStores(db.knex);
    studyId = (await stores.studies.findByCode('DEMO'))!.id;
    const siteId = at(await stores.studies.sites({ id: studyId }), 0, 'the sites').id;
    const patient = await stores.patients.insert({ studyId, siteId, subject: '01-001', sex: 'female', birthYear: 1970, enrolledOn: '2024-01-01' });
    const ids = await stores.studies.designIds({ id: studyId });
    const record = only(await stores.records.insertMany([{
      patientId: patient.id, visitId: ids.visits.get('screening')!, formId: ids.forms.get('vs')!, instance: 1, studyId, siteId, source: 'api',
      status: 'complete', values: { sbp: '120' }, notDone: {}, tables: {},
    }]), 'the inserted records');
    queryId = only(await stores.queries.insert([{
      studyId, recordId: record.id, patientId: patient.id, siteId, fieldCode: 'sbp', origin: 'manual', checkCode: null, message: 'Check it.',
      openedBy: 'Sponsor (API)', opener: { type: 'api_key', id: 4 },
    }]), 'the inserted queries');
  });

  it('finds the query for a step with its opener, and nothing in another study', async () => {
    const stores = createStores(db.knex);
    const found = await inTransaction(db.knex, (s) => s.queries.findForStep(studyId, queryId));
    expect(found).to.deep.include({ id: queryId, subject: '01-001', fieldCode: 'sbp', origin: 'manual', status: 'open', opener: { type: 'api_key', id: 4 } });
    expect(await stores.queries.findForStep(studyId + 1000, queryId)).to.equal(undefined);
  });

  it('keeps answers in order and marks the query answered; the read gives the thread with UTC times', async () => {
    const stores = createStores(db.knex);
    const first = await stores.queries.answer(queryId, { text: 'First.', author: { type: 'user', id: 1 }, authorName: 'Anna' });
    const second = await stores.queries.answer(queryId, { text: 'Second.', author: { type: 'api_key', id: 5 }, authorName: 'Lab (API)' });
    const read = await stores.queries.read(queryId);
    expect(read.status).to.equal('answered');
    expect(read.answers.map((a) => [a.id, a.text, a.authorType, a.author])).to.deep.equal([[first, 'First.', 'user', 'Anna'], [second, 'Second.', 'api_key', 'Lab (API)']]);
    expect(at(read.answers, 0).answeredAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('a second step waits for the first one\'s transaction (row lock), so the later one sees the query closed', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    const first = inTransaction(db.knex, async (s) => {
      await s.queries.findForStep(studyId, queryId);
      await held;
      await s.queries.close([queryId], { type: 'api_key', by: 'Sponsor (API)', reason: 'Done.' });
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = inTransaction(db.knex, (s) => s.queries.findForStep(studyId, queryId));
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await first;
    expect((await second)?.status).to.equal('closed');
    const read = await createStores(db.knex).queries.read(queryId);
    expect(read).to.deep.include({ status: 'closed', closedBy: 'Sponsor (API)', closedByType: 'api_key', closeReason: 'Done.' });
  });

  it('closing leaves a closed query as it was closed', async () => {
    const stores = createStores(db.knex);
    await stores.queries.close([queryId], { type: 'system', by: 'Someone else', reason: 'Again.' });
    expect(await stores.queries.read(queryId)).to.deep.include({ closedBy: 'Sponsor (API)', closeReason: 'Done.' });
  });
});
