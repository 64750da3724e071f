import path from 'node:path';
import type { Knex } from 'knex';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrator.js';

/**
 * The suite's database: `TEST_DATABASE_URL` when set (CI points it at a throwaway database on the
 * machine's PostgreSQL), otherwise an embedded server of its own (test-output/pg, port 54339), so the
 * tests never touch the data of `make run`. Opened once per mocha process, closed by the root hook.
 */
export const testEnv: NodeJS.ProcessEnv = process.env.TEST_DATABASE_URL
  ? { DATABASE_URL: process.env.TEST_DATABASE_URL }
  : { DATA_DIR: path.resolve('test-output/data'), EMBEDDED_PG_PORT: '54339', EMBEDDED_PG_DATABASE: 'sdx_test' };

/**
 * Kept on globalThis: mocha loads the root hook through `require` and the tests through `import`,
 * which gives two copies of this module, and both must close the one database the suite opened.
 */
const shared = globalThis as { sdxTestDatabase?: Promise<Database> };

export function testConfig(overrides: NodeJS.ProcessEnv = {}): Config {
  return loadConfig({ ...testEnv, NODE_ENV: 'test', PORT: '8080', BASE_URL: 'http://sdx.test', ...overrides });
}

export function testDatabase(): Promise<Database> {
  shared.sdxTestDatabase ??= (async () => {
    const db = await openDatabase(testConfig(), 20);
    await migrateToLatest(db.knex);
    return db;
  })();
  return shared.sdxTestDatabase;
}

export async function closeTestDatabase(): Promise<void> {
  const opened = shared.sdxTestDatabase;
  shared.sdxTestDatabase = undefined;
  if (opened) await (await opened).close();
}

/** Empties every table (not the migrations'), so each test file builds exactly the world it reads. */
export async function resetDatabase(knex: Knex): Promise<void> {
  const { rows } = await knex.raw(`select tablename from pg_tables where schemaname = current_schema() and tablename not like 'knex_%'`);
  const tables = rows.map((r: { tablename: string }) => `"${r.tablename}"`).join(', ');
  await knex.raw(`truncate ${tables} restart identity cascade`);
}
