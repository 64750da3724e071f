import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { checkpointFiles, loadSigningKey } from '../../src/auditCheckpointFiles.js';
import { checkpointEveryStudy } from '../../src/auditCheckpointSchedule.js';
import { authenticateKey } from '../../src/domain/apiKeys/authenticateKey.js';
import { importFhirRecord } from '../../src/domain/fhir/importFhirRecord.js';
import { fhirJsonEntries } from '../helpers/fhirFiles.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import type { Database } from '../../src/db/knex.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import { createStudyWorld, demoDesign, giveConsent, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { resetDatabase, suiteAdminUrl, testDatabase, testEnv } from '../helpers/testDatabase.js';

/**
 * `sdx backup` and `sdx restore` (src/db/backup.ts) through the command line, on the suite's server:
 * a backup taken while another writer keeps going restores into a fresh database whose audit trails
 * verify (checkpoints included) and whose rows are the same.
 */

const run = promisify(execFile);
const BUSTER = fs.readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json', 'utf8');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sdx-backup-'));
const checkpointEnv = { AUDIT_CHECKPOINT_DIR: path.join(home, 'checkpoints'), AUDIT_SIGNING_KEY_FILE: path.join(home, 'keys', 'audit.pem') };

/** What `sdx … --json` prints (the members the tests read by name; the rest they compare whole), with the exit code. */
interface SdxAnswer { exit: number; rows?: Record<string, number>; error?: { code: string; message: string } }

/** Runs sdx with --json against the suite's database, or another one by its URL. */
async function sdx(args: string[], databaseUrl?: string): Promise<SdxAnswer> {
  const env = { ...process.env, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : testEnv), ...checkpointEnv };
  const result = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', ...args, '--json'], { env, maxBuffer: 1 << 24 })
    .catch((e: { stdout: string; code: number }) => e);
  return { ...(JSON.parse(result.stdout.trim()) as Omit<SdxAnswer, 'exit'>), exit: (result as { code?: number }).code ?? 0 };
}

const sameTables = ['patients', 'consents', 'records', 'queries', 'fhir_imports', 'users', 'study_roles', 'api_keys', 'sites', 'fields'];

describe('sdx backup and sdx restore', function () {
  this.timeout(180_000);
  let db: Database;
  const made: { name: string; url: string; knex?: Knex }[] = [];

  /**
   * A throwaway database on the suite's server, made and dropped by its superuser, dropped after the file.
   * The restore runs there as that superuser, its owner (the runtime role of the suite's own database may
   * make no database).
   */
  async function freshDatabase(): Promise<{ url: string; knex: Knex }> {
    const name = `sdx_audit_restore_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: await suiteAdminUrl() });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = Object.assign(new URL(await suiteAdminUrl()), { pathname: `/${name}` }).toString();
    const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
    made.push({ name, url, knex });
    return { url, knex };
  }

  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    const world = await createStudyWorld(db.knex);
    await createStudyWorld(db.knex, demoDesign('BUSY'));
    const key = await authenticateKey(createStores(db.knex).apiKeys, world.key);
    for (const subject of ['B-1', 'B-2']) {
      const stores = createStores(db.knex);
      const study = (await stores.studies.findByCode(world.code))!;
      const site = (await stores.studies.sites(study)).find((s) => s.number === '01')!;
      await stores.patients.insert({ studyId: study.id, siteId: site.id, subject, sex: 'male', birthYear: 1988, enrolledOn: '2016-12-28' });
      await giveConsent(db.knex, world.code, subject, '2016-12-01');
      // Records, automatic queries and audit rows through the FHIR import's one write path.
      await inTransaction(db.knex, async (s) => importFhirRecord(s, key, (await s.studies.findByCode(world.code))!, { subject, mode: 'save', entries: fhirJsonEntries(BUSTER) }));
    }
    expect(Number((await db.knex('records').count('* as n').first())!.n)).to.be.above(4);
    await checkpointEveryStudy(db.knex, checkpointFiles(checkpointEnv.AUDIT_CHECKPOINT_DIR, loadSigningKey(checkpointEnv.AUDIT_SIGNING_KEY_FILE)));
  });

  after(async () => {
    const admin = new pg.Client({ connectionString: await suiteAdminUrl() });
    await admin.connect();
    for (const d of made) {
      await d.knex?.destroy();
      await admin.query(`drop database if exists ${d.name} with (force)`);
    }
    await admin.end();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('backs up while another writer keeps going, and restores into a fresh database that verifies and reads the same', async () => {
    // The writer: audited changes of BUSY, one transaction after another, until the backup is done.
    let writing = true;
    let changes = 0;
    const writer = (async () => {
      while (writing) {
        await inTransaction(db.knex, (s) => changeStudySettings(s, operator, 'BUSY', { locked: changes % 2 === 0 }));
        changes += 1;
      }
    })();
    const file = path.join(home, 'site.sdxbackup');
    const backup = await sdx(['backup', file]);
    writing = false;
    await writer;
    expect(backup).to.include({ exit: 0, file });
    expect(changes).to.be.above(0);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(backup.rows?.records).to.equal(Number((await db.knex('records').count('* as n').first())!.n));

    const target = await freshDatabase();
    const restored = await sdx(['restore', file], target.url);
    expect(restored).to.deep.include({ exit: 0, rows: backup.rows });

    for (const study of ['DEMO', 'BUSY']) {
      expect(await sdx(['audit', 'verify', '--study', study], target.url)).to.include({ ok: true, exit: 0 });
    }
    for (const table of sameTables) {
      expect(await target.knex(table).orderBy('id'), table).to.deep.equal(await db.knex(table).orderBy('id'));
    }
    // BUSY went on after the snapshot: the restored trail is a prefix of the live one, row for row.
    const busy = async (knex: Knex) => knex('audit_events').join('studies', 'studies.id', 'audit_events.study_id').where('studies.code', 'BUSY').orderBy('audit_events.id')
      .select<{ id: number; hash: string }[]>('audit_events.id', 'hash');
    const live = await busy(db.knex);
    const copy = await busy(target.knex);
    expect(copy).to.deep.equal(live.slice(0, copy.length));
    // One snapshot: the restored study's lock is the one its last restored audit row recorded, though
    // the studies table was copied before the audit table while the writer kept changing both.
    const lastLock = await target.knex('audit_events').where({ field_code: 'locked' }).join('studies', 'studies.id', 'audit_events.study_id')
      .where('studies.code', 'BUSY').orderBy('audit_events.id', 'desc').first<{ new_value: string; locked: boolean } | undefined>('new_value', 'studies.locked');
    expect(lastLock?.new_value).to.equal(String(lastLock?.locked));
    // Ids go on after the restored ones.
    const { rows: [next] } = await target.knex.raw<{ rows: [{ n: number | string }] }>("select nextval(pg_get_serial_sequence('audit_events', 'id')) as n");
    expect(Number(next.n)).to.be.above(present(copy.at(-1), 'the last restored row').id);
  });

  it('refuses to restore into a database that holds data, and a file cut short leaves no rows', async () => {
    const file = path.join(home, 'second.sdxbackup');
    expect(await sdx(['backup', file])).to.include({ exit: 0 });
    expect(await sdx(['backup', file])).to.deep.include({ exit: 1, error: { code: 'internal', message: `${file} exists already: a backup never overwrites a file` } });
    const into = await sdx(['restore', file]);
    expect(into.exit).to.equal(1);
    expect(into.error?.message).to.match(/^the database holds data \(.*patients.*\): restore only into an empty database$/);

    const cut = path.join(home, 'cut.sdxbackup');
    const whole = fs.readFileSync(file);
    fs.writeFileSync(cut, whole.subarray(0, Math.floor(whole.length * 0.8)));
    const target = await freshDatabase();
    const failed = await sdx(['restore', cut], target.url);
    expect(failed).to.deep.include({ exit: 1, error: { code: 'internal', message: `${cut} is damaged or cut short (unexpected end of file)` } });
    expect(Number((await target.knex('records').count('* as n').first())!.n)).to.equal(0);
    expect(Number((await target.knex('audit_events').count('* as n').first())!.n)).to.equal(0);
  });
});
