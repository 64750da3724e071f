import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { checkpointFiles, loadSigningKey } from '../../src/auditCheckpointFiles.js';
import { checkpointEveryStudy } from '../../src/auditCheckpointSchedule.js';
import type { Knex } from 'knex';
import type { Database } from '../../src/db/knex.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { verifyAuditTrail } from '../../src/domain/studies/verifyAuditTrail.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { createStudyWorld, demoDesign, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { resetDatabase, testDatabase, testEnv, testOwnerDatabase } from '../helpers/testDatabase.js';

const run = promisify(execFile);

// The checkpoints and their key live outside the database: here in a folder of this file's own.
const checkpointHome = fs.mkdtempSync(path.join(os.tmpdir(), 'sdx-audit-'));
const checkpointEnv = { AUDIT_CHECKPOINT_DIR: path.join(checkpointHome, 'checkpoints'), AUDIT_SIGNING_KEY_FILE: path.join(checkpointHome, 'keys', 'audit.pem') };

/** What `sdx audit … --json` prints (the members the tests read by name; the rest they compare whole), with the exit code. */
interface AuditAnswer { exit: number; message?: string; accepted?: string; checkpoint?: { rows: number } }

async function sdxAudit(command: 'verify' | 'checkpoint', study: string, options: string[] = []): Promise<AuditAnswer> {
  const result = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', 'audit', command, '--study', study, ...options, '--json'], { env: { ...process.env, ...testEnv, ...checkpointEnv } })
    .catch((e: { stdout: string; code: number }) => e);
  return { ...(JSON.parse(result.stdout.trim()) as Omit<AuditAnswer, 'exit'>), exit: (result as { code?: number }).code ?? 0 };
}
const sdxVerify = (study: string) => sdxAudit('verify', study);

/** A study of its own with a few audited changes, for one tampering each. */
async function auditedStudy(db: Database, code: string): Promise<number[]> {
  await createStudyWorld(db.knex, demoDesign(code));
  for (const locked of [true, false, true, false]) await inTransaction(db.knex, (s) => changeStudySettings(s, operator, code, { locked }));
  const id = (await createStores(db.knex).studies.findByCode(code))!.id;
  return (await db.knex('audit_events').where({ study_id: id }).orderBy('id').select('id')).map((r: { id: number }) => r.id);
}

/**
 * A change behind the service's back, as an attacker with the owner's rights would make it: every trigger
 * of the table (the append-only guard and the TRUNCATE guard) off for one transaction, which only the owner
 * can do.
 */
async function tamper(change: (owner: Knex.Transaction) => Promise<unknown>): Promise<void> {
  await (await testOwnerDatabase()).knex.transaction(async (trx) => {
    await trx.raw('alter table audit_events disable trigger user');
    await change(trx);
    await trx.raw('alter table audit_events enable trigger user');
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
    const failed = await inTransaction(db.knex, (s) => recordConsent(s, operator, { study: 'DEMO', subject: 'nobody', change: { given: '2024-01-01' } })).catch((e: unknown) => e);
    expect(failed).to.have.property('code', 'unknown_subject');
    expect((await db.knex('audit_events').count('* as n').first())!.n).to.equal(before);
  });

  it('lets sdx audit verify name the first row changed behind the service\'s back', async () => {
    expect(await sdxVerify('DEMO')).to.include({ ok: true, exit: 0 });
    const victim = present(await db.knex('audit_events').orderBy('id').offset(2).first<{ id: number } | undefined>('id'), 'the third audit row').id;
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

  describe('anchored by signed checkpoints outside the database', () => {
    after(() => fs.rmSync(checkpointHome, { recursive: true, force: true }));

    it('verifies an untouched study against its checkpoint, and writes no second checkpoint while the chain stands still', async () => {
      const ids = await auditedStudy(db, 'CALM');
      expect(await sdxAudit('checkpoint', 'CALM')).to.include({ written: true, rows: ids.length, exit: 0 });
      expect(await sdxAudit('checkpoint', 'CALM')).to.include({ written: false, reason: 'unchanged', exit: 0 });
      const verdict = await sdxVerify('CALM');
      expect(verdict).to.include({ ok: true, rows: ids.length, exit: 0 });
      expect(verdict.checkpoint?.rows).to.equal(ids.length);
      expect(fs.readFileSync(path.join(checkpointEnv.AUDIT_CHECKPOINT_DIR, 'CALM.jsonl'), 'utf8').trim().split('\n')).to.have.length(1);
      expect(fs.statSync(checkpointEnv.AUDIT_SIGNING_KEY_FILE).mode & 0o777).to.equal(0o600);
    });

    it('catches the deletion of the newest row, which the chain alone lets pass', async () => {
      const ids = await auditedStudy(db, 'NEWEST');
      expect(await sdxAudit('checkpoint', 'NEWEST')).to.include({ written: true, exit: 0 });
      await tamper((owner) => owner('audit_events').where({ id: ids.at(-1) }).delete());
      expect((await verifyAuditTrail(createStores(db.knex), 'NEWEST')).ok).to.equal(true);
      const verdict = await sdxVerify('NEWEST');
      expect(verdict).to.deep.include({ ok: false, problem: 'missing_after_checkpoint', missing_rows: { from: ids.length, to: ids.length }, exit: 3 });
      expect(verdict.message).to.match(new RegExp(`^missing rows ${ids.length}\\.\\.${ids.length} after checkpoint of \\d{4}-`));
      // Nor does the next checkpoint sign the shortened trail.
      expect(await sdxAudit('checkpoint', 'NEWEST')).to.include({ written: false, reason: 'broken', problem: 'missing_after_checkpoint', exit: 3 });
      // Unless an operator accepts the loss (after a restore), saying why: the new checkpoint carries it.
      const accepted = await sdxAudit('checkpoint', 'NEWEST', ['--accept-loss', 'restored from the backup of 02:00']);
      expect(accepted).to.include({ written: true, rows: ids.length - 1, exit: 0 });
      expect(accepted.accepted).to.match(new RegExp(`^missing rows ${ids.length}\\.\\.${ids.length} after checkpoint of .*; accepted: restored from the backup of 02:00$`));
      expect(await sdxVerify('NEWEST')).to.include({ ok: true, rows: ids.length - 1, exit: 0 });
    });

    it('catches rows deleted from the end and written on after, where the chain is whole again', async () => {
      const ids = await auditedStudy(db, 'REWRITE');
      expect(await sdxAudit('checkpoint', 'REWRITE')).to.include({ written: true, exit: 0 });
      await tamper((owner) => owner('audit_events').where({ id: ids.at(-1) }).delete());
      await inTransaction(db.knex, (s) => changeStudySettings(s, operator, 'REWRITE', { locked: true }));
      expect(await sdxVerify('REWRITE')).to.include({ ok: false, problem: 'diverged_from_checkpoint', rows: ids.length, exit: 3 });
    });

    it('catches the deletion of a middle row', async () => {
      const ids = await auditedStudy(db, 'MIDDLE');
      expect(await sdxAudit('checkpoint', 'MIDDLE')).to.include({ written: true, exit: 0 });
      await tamper((owner) => owner('audit_events').where({ id: ids[2] }).delete());
      expect(await sdxVerify('MIDDLE')).to.include({ ok: false, first_bad_row: ids[3], problem: 'missing_before', exit: 3 });
      // A chain broken inside is never re-anchored, whatever the reason given.
      expect(await sdxAudit('checkpoint', 'MIDDLE', ['--accept-loss', 'please'])).to.include({ written: false, reason: 'broken', problem: 'missing_before', exit: 3 });
    });

    it('refuses a checkpoint whose signature does not hold', async () => {
      const ids = await auditedStudy(db, 'FORGED');
      expect(await sdxAudit('checkpoint', 'FORGED')).to.include({ written: true, exit: 0 });
      const file = path.join(checkpointEnv.AUDIT_CHECKPOINT_DIR, 'FORGED.jsonl');
      // An attacker lowers the signed row count to match a trail they shortened.
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace(`"rows":${ids.length}`, `"rows":${ids.length - 1}`));
      expect(await sdxVerify('FORGED')).to.include({ ok: false, problem: 'checkpoint_signature_invalid', exit: 3 });
    });

    it('lets several service processes run the scheduled round at once: one checkpoint per moved study, none for one unchanged', async () => {
      await auditedStudy(db, 'BUSY');
      const checkpoints = checkpointFiles(checkpointEnv.AUDIT_CHECKPOINT_DIR, loadSigningKey(checkpointEnv.AUDIT_SIGNING_KEY_FILE));
      const lines = (code: string) => fs.readFileSync(path.join(checkpointEnv.AUDIT_CHECKPOINT_DIR, `${code}.jsonl`), 'utf8').trim().split('\n').length;
      await Promise.all([checkpointEveryStudy(db.knex, checkpoints), checkpointEveryStudy(db.knex, checkpoints), checkpointEveryStudy(db.knex, checkpoints)]);
      expect(lines('BUSY')).to.equal(1);
      expect(lines('CALM')).to.equal(1);
      // The broken trails of this file's other tests are never signed.
      expect(lines('MIDDLE')).to.equal(1);
      expect(lines('REWRITE')).to.equal(1);
      expect(await sdxVerify('BUSY')).to.include({ ok: true, exit: 0 });
    });

    it('catches a TRUNCATE of the whole audit table', async () => {
      const ids = await auditedStudy(db, 'CUT');
      expect(await sdxAudit('checkpoint', 'CUT')).to.include({ written: true, exit: 0 });
      await tamper((owner) => owner.raw('truncate audit_events'));
      const verdict = await sdxVerify('CUT');
      expect(verdict).to.deep.include({ ok: false, rows: 0, problem: 'missing_after_checkpoint', missing_rows: { from: 1, to: ids.length }, exit: 3 });
      expect(verdict.message).to.match(new RegExp(`^missing rows 1\\.\\.${ids.length} after checkpoint of `));
      // Every checkpointed study shows it, not only the one asked about.
      expect(await sdxVerify('CALM')).to.include({ ok: false, problem: 'missing_after_checkpoint', exit: 3 });
    });
  });
});
