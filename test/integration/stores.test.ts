import { expect } from 'chai';
import { auditEntry } from '../../src/domain/auditTrail.js';
import { DomainError } from '../../src/domain/errors.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import { up as backfillUnblindedOnly } from '../../src/db/migrations/20261126090100_backfill_unblinded_only.js';
import { up as backfillStoppedApiKeys } from '../../src/db/migrations/20261126110200_backfill_stopped_api_keys.js';
import { keyStateOf } from '../../src/domain/apiKeys/keyState.js';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { grantRole, revokeRole } from '../../src/domain/people/roles.js';
import { studyEvent } from '../../src/domain/webhooks/webhookEvents.js';
import type { Database } from '../../src/db/knex.js';
import { addPerson, createStudyWorld, makeKey, operator } from '../helpers/factories.js';
import { at, only, present } from '../helpers/only.js';
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

  it('backfills the stop of keys that today\'s derivation shows as stopped, so giving the role or the right back after the upgrade revives none', async () => {
    const { knex } = db;
    await addPerson(knex, 'DEMO', 'gone-before-upgrade@sdx.test', { role: 'manager', canExport: true });
    await addPerson(knex, 'DEMO', 'no-export-before-upgrade@sdx.test', { role: 'manager', canExport: true });
    const gone = await makeKey(knex, { study: 'DEMO', by: 'gone-before-upgrade@sdx.test', name: 'Key of a former manager', canRead: false });
    const reader = await makeKey(knex, { study: 'DEMO', by: 'no-export-before-upgrade@sdx.test', name: 'Reader', canWrite: false, canEnrol: false });
    const writer = await makeKey(knex, { study: 'DEMO', by: 'no-export-before-upgrade@sdx.test', name: 'Writer', canRead: false });
    const revoked = await makeKey(knex, { study: 'DEMO', by: 'gone-before-upgrade@sdx.test', name: 'Revoked' });
    await inTransaction(knex, (s) => revokeApiKey(s, { study: 'DEMO', keyId: revoked.id, by: 'gone-before-upgrade@sdx.test', via: 'cli' }));
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'gone-before-upgrade@sdx.test' }));
    await inTransaction(knex, (s) => revokeRole(s, operator, { study: 'DEMO', email: 'no-export-before-upgrade@sdx.test', export: true }));
    const ids = [gone.id, reader.id, writer.id, revoked.id];
    // Before the upgrade nothing was kept: the stop was derived from the maker's roles alone.
    await knex('api_keys').whereIn('id', ids).update({ stopped_at: null, stopped_reason: null });

    await backfillStoppedApiKeys(knex);
    const kept = async () => (await knex('api_keys').whereIn('id', ids).orderBy('id').select<{ stopped_reason: string | null; stopped_at: Date | null }[]>('stopped_reason', 'stopped_at'))
      .map((r) => [r.stopped_reason, r.stopped_at !== null]);
    expect(await kept()).to.deep.equal([['maker_not_manager', true], ['maker_lost_export', true], [null, false], [null, false]]);

    await inTransaction(knex, (s) => grantRole(s, operator, { study: 'DEMO', email: 'gone-before-upgrade@sdx.test', role: 'manager', canExport: true, unblinded: true }));
    await inTransaction(knex, (s) => grantRole(s, operator, { study: 'DEMO', email: 'no-export-before-upgrade@sdx.test', role: 'manager', canExport: true, unblinded: true }));
    const states = await Promise.all(ids.map(async (id) => keyStateOf(present(await createStores(knex).apiKeys.findById(studyId, id), `key ${id}`), new Date())));
    expect(states).to.deep.equal([
      { state: 'stopped', why: 'maker_not_manager' }, { state: 'stopped', why: 'maker_lost_export' }, { state: 'active' }, { state: 'revoked' },
    ]);
  });

  it('a key made while its maker\'s manager role is being taken waits for the role change, so no key of the maker escapes the kept stop', async () => {
    const { knex } = db;
    await addPerson(knex, 'DEMO', 'racing@sdx.test', { role: 'manager', canExport: true });
    let release = () => {};
    const held = new Promise<void>((resolve) => { release = resolve; });
    let taken = () => {};
    const roleTaken = new Promise<void>((resolve) => { taken = resolve; });
    const revoking = inTransaction(knex, async (s) => {
      await revokeRole(s, operator, { study: 'DEMO', email: 'racing@sdx.test' });
      taken();
      await held;
    });
    await roleTaken;
    // The role change has not committed yet: the key is asked for in between.
    const making = makeKey(knex, { study: 'DEMO', by: 'racing@sdx.test', name: 'Made during the role change' }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await revoking;
    expect(await making).to.be.instanceOf(DomainError).and.to.have.property('code', 'not_a_manager');
    await inTransaction(knex, (s) => grantRole(s, operator, { study: 'DEMO', email: 'racing@sdx.test', role: 'manager', canExport: true, unblinded: true }));
    const keys = (await createStores(knex).apiKeys.list(studyId)).filter((key) => key.makerName === 'racing');
    expect(keys.map((key) => keyStateOf(key, new Date()).state)).to.not.include('active');
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
