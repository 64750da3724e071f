import { expect } from 'chai';
import { auditEntry } from '../../src/domain/auditTrail.js';
import { DomainError } from '../../src/domain/errors.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import { up as backfillUnblindedOnly } from '../../src/db/migrations/20261126090100_backfill_unblinded_only.js';
import { studyEvent } from '../../src/domain/webhooks/webhookEvents.js';
import type { Database } from '../../src/db/knex.js';
import { createStudyWorld, operator } from '../helpers/factories.js';
import { at, only } from '../helpers/only.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

describe('src/db stores on PostgreSQL', () => {
  let db: Database;
  let studyId: number;
  let siteId: number;
  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    await createStudyWorld(db.knex);
    const study = await createStores(db.knex).studies.findByCode('DEMO');
    studyId = study!.id;
    siteId = at(await createStores(db.knex).studies.sites({ id: studyId }), 0, 'the sites').id;
  });

  const patient = (subject: string) => ({ studyId, siteId, subject, sex: 'female', birthYear: 1970, enrolledOn: '2024-01-01' });

  it('runs migrations again as a no-op', async () => {
    expect(await migrateToLatest(db.knex)).to.deep.equal([]);
  });

  it('backfills unblinded_only on events written before it was stored, as studyEvent sets it: true only for a form of the unblinded team', async () => {
    const stores = createStores(db.knex);
    const study = (await stores.studies.findByCode('DEMO'))!;
    expect(study.blinded).to.equal(true);
    await stores.webhooks.insertSubscription({ studyId, url: 'https://hooks.example.org/backfill', eventTypes: ['record.saved'], unblinded: true, secret: 'whsec_backfill', createdBy: null });
    const where = { subject: 'BACKFILL-1', site: '01', visit: 'baseline', instance: 1, fields: [] };
    await stores.webhooks.publish([studyEvent(study, 'record.saved', { ...where, form: 'ip_alloc' }), studyEvent(study, 'record.saved', { ...where, form: 'vs' })]);
    const flags = () => db.knex('webhook_events').whereRaw("data->>'subject' = ?", [where.subject]).orderBy('id').pluck<boolean[]>('unblinded_only');
    expect(await flags()).to.deep.equal([true, false]);
    await db.knex('webhook_events').update({ unblinded_only: false });
    await backfillUnblindedOnly(db.knex);
    expect(await flags()).to.deep.equal([true, false]);
  });

  it('translates a duplicate subject (23505) into DomainError subject_taken', async () => {
    await createStores(db.knex).patients.insert(patient('T-1'));
    const error = await createStores(db.knex).patients.insert(patient('T-1')).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DomainError);
    expect(error).to.have.property('code', 'subject_taken');
  });

  it('rolls a whole use case back when it throws, leaving nothing written', async () => {
    const attempt = inTransaction(db.knex, async (stores) => {
      await stores.patients.insert(patient('T-2'));
      throw new Error('fails after the insert');
    });
    expect((await attempt.catch((e: Error) => e)).message).to.equal('fails after the insert');
    expect(await createStores(db.knex).patients.findBySubject(studyId, 'T-2')).to.equal(undefined);
  });

  it("writes a use case's audit entries as its transaction's last step, and none when it rolls back", async () => {
    const trail = () => db.knex('audit_events').where({ study_id: studyId, action: 'test.step' }).count<{ n: string }[]>('id as n').first();
    const before = Number((await trail())?.n);
    const entry = auditEntry(operator, studyId, { action: 'test.step' });
    const seenInside = await inTransaction(db.knex, async (stores) => {
      await stores.audit.append([entry]);
      // Buffered until the commit step: nothing is in the table yet, even for this transaction.
      return Number((await stores.audit.chain(studyId)).filter((row) => row.action === 'test.step').length);
    });
    expect(seenInside).to.equal(before);
    expect(Number((await trail())?.n)).to.equal(before + 1);
    const failing = inTransaction(db.knex, async (stores) => {
      await stores.audit.append([entry]);
      throw new Error('fails after the append');
    });
    expect((await failing.catch((e: Error) => e)).message).to.equal('fails after the append');
    expect(Number((await trail())?.n)).to.equal(before + 1);
  });

  it('refuses an audit entry in a transaction opened without the commit step, so it cannot be dropped', async () => {
    const refusal = await db.knex.transaction((trx) => createStores(trx).audit.append([auditEntry(operator, studyId, { action: 'test.step' })]))
      .catch((e: Error) => e);
    expect(refusal).to.be.instanceOf(Error);
    expect((refusal as Error).message).to.match(/commit step/);
  });

  it('hands out site numbers without duplicates under concurrent transactions', async () => {
    const numbers = await Promise.all(Array.from({ length: 20 }, () => inTransaction(db.knex, (s) => s.studies.takeNextSeq(siteId))));
    expect(new Set(numbers).size).to.equal(20);
  });

  it('inserts a form instance once when two writers race (the other gets nothing back)', async () => {
    const p = only(await createStores(db.knex).patients.findBySubjects(studyId, ['T-1']), 'the patients T-1');
    const ids = await createStores(db.knex).studies.designIds({ id: studyId });
    const record = { patientId: p.id, visitId: ids.visits.get('screening')!, formId: ids.forms.get('vs')!, instance: 1, studyId, siteId, source: 'api', status: 'complete' as const, values: { sbp: '120' }, notDone: {}, tables: {} };
    const results = await Promise.all([1, 2].map(() => inTransaction(db.knex, (s) => s.records.insertMany([record]))));
    expect(results.map((inserted) => inserted.length).sort()).to.deep.equal([0, 1]);
  });
});
