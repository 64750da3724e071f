import path from 'node:path';
import type { Knex } from 'knex';
import { loadConfig, type Config } from '../../src/config.js';
import { startEmbedded } from '../../src/db/embedded.js';
import { openDatabase, openOwnerDatabase, type Database } from '../../src/db/knex.js';
import { prepareSchema } from '../../src/db/migrator.js';
import { provisionRoles, rolesFor, withUser } from '../../src/db/roles.js';

/**
 * The suite's database: `TEST_DATABASE_URL` when set (CI points it at a throwaway database on the
 * machine's PostgreSQL), otherwise an embedded server of its own (test-output/data, reached through
 * its own socket), so the tests never touch the data of `make run`. Opened once per mocha process,
 * closed by the root hook.
 *
 * Either way the suite works as the service does: migrations as the database's owner role, the tests'
 * service and factories as its runtime role (src/db/roles.ts). `TEST_DATABASE_URL` is a superuser's
 * address on a server that trusts local connections: the suite makes the database's two roles there
 * (as the embedded server does for its own), and connects as each without a password.
 */
const suiteUrl = process.env.TEST_DATABASE_URL;
const suiteDatabase = suiteUrl ? decodeURIComponent(new URL(suiteUrl).pathname.slice(1)) : undefined;

export const testEnv: NodeJS.ProcessEnv = suiteUrl && suiteDatabase
  ? {
    DATABASE_URL: withUser(suiteUrl, rolesFor(suiteDatabase).runtime),
    DATABASE_OWNER_URL: withUser(suiteUrl, rolesFor(suiteDatabase).owner),
    // Not ./data's, which `make run` fills: the suite's audit checkpoints and their key stay with the suite.
    AUDIT_CHECKPOINT_DIR: path.resolve('test-output/audit-checkpoints'),
    AUDIT_SIGNING_KEY_FILE: path.resolve('test-output/audit-signing-key.pem'),
  }
  : { DATA_DIR: path.resolve('test-output/data'), EMBEDDED_PG_DATABASE: 'sdx_test' };

/**
 * Kept on globalThis: mocha loads the root hook through `require` and the tests through `import`,
 * which gives two copies of this module, and both must close the one database the suite opened.
 */
const shared = globalThis as { sdxTestDatabase?: Promise<Database>; sdxTestOwner?: Promise<Database> };

/** The variables that choose a database: `overrides` naming any of them choose it alone, without the suite's. */
export const DATABASE_VARIABLES = ['DATABASE_URL', 'DATABASE_OWNER_URL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'EMBEDDED_PG_DATABASE'];

/** The suite's database settings, unless `env` chooses a database of its own. */
export function databaseEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return DATABASE_VARIABLES.some((name) => name in env) ? {} : testEnv;
}

export function testConfig(overrides: NodeJS.ProcessEnv = {}): Config {
  return loadConfig({ ...databaseEnv(overrides), NODE_ENV: 'test', PORT: '8080', BASE_URL: 'http://sdx.test', ...overrides });
}

/**
 * The suite's database as its owner: for what only the owner may do (emptying the audit trail, tampering
 * with it on purpose). Opening it migrates it.
 */
export function testOwnerDatabase(): Promise<Database> {
  shared.sdxTestOwner ??= (async () => {
    if (suiteUrl && suiteDatabase) await provisionRoles(suiteUrl, suiteDatabase);
    const owner = await openOwnerDatabase(testConfig(), 2, { create: true });
    await prepareSchema(owner);
    return owner;
  })();
  return shared.sdxTestOwner;
}

/**
 * A superuser's address of the suite's server, on its `postgres` database: for tests that make and drop
 * databases of their own beside the suite's (a restore's target). The embedded server is joined, never started here.
 */
export async function suiteAdminUrl(): Promise<string> {
  await testOwnerDatabase();
  const url = new URL(suiteUrl ?? (await startEmbedded(path.resolve('test-output/data'), { create: false })).adminUrl);
  url.pathname = '/postgres';
  return url.toString();
}

/** The suite's database as the service's runtime role. */
export function testDatabase(): Promise<Database> {
  shared.sdxTestDatabase ??= testOwnerDatabase().then(() => openDatabase(testConfig(), 20));
  return shared.sdxTestDatabase;
}

export async function closeTestDatabase(): Promise<void> {
  for (const name of ['sdxTestDatabase', 'sdxTestOwner'] as const) {
    const opened = shared[name];
    shared[name] = undefined;
    if (opened) await (await opened).close();
  }
}

/**
 * Empties every table (not the migrations'), so each test file builds exactly the world it reads.
 * The audit trail refuses TRUNCATE to everyone by trigger: the owner switches that trigger off
 * inside the emptying transaction only, so no other session ever sees it off. (Dropping and
 * recreating the database instead would cost every test file a full migration run.)
 */
export async function resetDatabase(knex: Knex): Promise<void> {
  const owner = (await testOwnerDatabase()).knex;
  const { rows } = await knex.raw<{ rows: { tablename: string }[] }>(`select tablename from pg_tables where schemaname = current_schema() and tablename not like 'knex_%'`);
  const tables = rows.map((r) => `"${r.tablename}"`).join(', ');
  await owner.transaction(async (trx) => {
    await trx.raw('alter table audit_events disable trigger audit_events_no_truncate');
    await trx.raw(`truncate ${tables} restart identity cascade`);
    await trx.raw('alter table audit_events enable trigger audit_events_no_truncate');
  });
}
