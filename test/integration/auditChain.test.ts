import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Knex } from 'knex';
import type { Database } from '../../src/db/knex.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { verifyAuditTrail } from '../../src/domain/studies/verifyAuditTrail.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { createStudyWorld, demoDesign, operator } from '../helpers/factories.js';
import { resetDatabase, testDatabase, testEnv, testOwnerDatabase } from '../helpers/testDatabase.js';

const run = promisify(execFile);

async function sdxVerify(study: string): Promise<any> {
  const result = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', 'audit', 'verify', '--study', study, '--json'], { env: { ...process.env, ...testEnv } })
    .catch((e: { stdout: string; code: number }) => e);
  return { ...JSON.parse(String(result.stdout).trim()), exit: (result as { code?: number }).code ?? 0 };
}

/** A change behind the service's back: only the table's owner can switch its trigger off, here for one transaction. */
async function tamper(change: (owner: Knex.Transaction) => Promise<unknown>): Promise<void> {
  await (await testOwnerDatabase()).knex.transaction(async (trx) => {
    await trx.raw('alter table audit_events disable trigger audit_events_append_only');
    await change(trx);
    await trx.raw('alter table audit_events enable trigger audit_events_append_only');
  });
}

describe('the tamper-evident audit trail', () => {
  let db: Database;
  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    await createStudyWorld(db.knex);
    // Many changes from concurrent transactions: the chain must still come out whole, in commit order.
    await Promise.all(Array.from({ length: 12 }, (_, i) =>
      inTransaction(db.knex, (s) => changeStudySettings(s, operator, 'DEMO', { enrolmentOpen: i % 2 === 0, apiEnabled: i % 3 !== 0 }))));
  });

  it('chains every row of a study, also when written by concurrent transactions', async () => {
    const verdict = await verifyAuditTrail(createStores(db.knex), 'DEMO');
    expect(verdict.ok).to.equal(true);
    expect(verdict.rows).to.be.greaterThan(3);
  });

  it('refuses UPDATE and DELETE of audit rows in the database itself, even to the table\'s owner', async () => {
    // The service's runtime role is not even granted them (test/api/databaseRoles.test.ts): the trigger stops the owner.
    const owner = (await testOwnerDatabase()).knex;
    const update = await owner('audit_events').update({ author: 'someone else' }).catch((e: Error) => e);
    expect(String(update)).to.match(/append-only/);
    const remove = await owner('audit_events').where('id', 1).delete().catch((e: Error) => e);
    expect(String(remove)).to.match(/append-only/);
  });

  it('writes no audit row for a use case that fails', async () => {
    const before = (await db.knex('audit_events').count('* as n').first())!.n;
    const failed = await inTransaction(db.knex, (s) => recordConsent(s, operator, { study: 'DEMO', subject: 'nobody', change: { given: '2024-01-01' } })).catch((e) => e);
    expect(failed.code).to.equal('unknown_subject');
    expect((await db.knex('audit_events').count('* as n').first())!.n).to.equal(before);
  });

  it('lets sdx audit verify name the first row changed behind the service\'s back', async () => {
    expect(await sdxVerify('DEMO')).to.include({ ok: true, exit: 0 });
    const victim = (await db.knex('audit_events').orderBy('id').offset(2).first('id'))!.id;
    await tamper((owner) => owner('audit_events').where({ id: victim }).update({ new_value: 'forged' }));
    expect(await sdxVerify('DEMO')).to.include({ ok: false, first_bad_row: victim, problem: 'altered', exit: 3 });
  });

  it('names the row after one deleted behind the service\'s back', async () => {
    // A second study with a clean chain of its own: the fault above stays in DEMO's chain.
    await createStudyWorld(db.knex, demoDesign('GAP'));
    await Promise.all([true, false, true].map((on) => inTransaction(db.knex, (s) => changeStudySettings(s, operator, 'GAP', { locked: on }))));
    const gap = (await createStores(db.knex).studies.findByCode('GAP'))!.id;
    const ids = (await db.knex('audit_events').where({ study_id: gap }).orderBy('id').select('id')).map((r: { id: number }) => r.id);
    expect((await verifyAuditTrail(createStores(db.knex), 'GAP')).ok).to.equal(true);
    await tamper((owner) => owner('audit_events').where({ id: ids[2] }).delete());
    expect(await verifyAuditTrail(createStores(db.knex), 'GAP')).to.deep.equal({ ok: false, rows: ids.length - 1, id: ids[3], problem: 'missing_before' });
  });
});
