import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import type { Database } from './knex.js';
import { grantRuntimeAccess } from './roles.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

interface Migration { name: string; file: string }

/**
 * Lists migrations by name without their extension, so the same history is recognised whether
 * they run from TypeScript sources (tests, tsx) or from the compiled JavaScript (`make run`).
 */
const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: () => Promise.resolve(fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{14}_.+\.(ts|js)$/.test(file) && !file.endsWith('.d.ts'))
    .sort()
    .map((file) => ({ name: file.replace(/\.(ts|js)$/, ''), file }))),
  getMigrationName: (migration) => migration.name,
  getMigration: (migration) => import(pathToFileURL(path.join(MIGRATIONS_DIR, migration.file)).href),
};

/**
 * Brings the schema up to date; safe to call from several processes at once (Knex takes a lock).
 * A schema already current is left alone without taking the lock, which the runtime role may not.
 */
export async function migrateToLatest(knex: Knex): Promise<string[]> {
  // Knex types both answers as any: list gives [completed, pending], latest [batch number, names applied].
  const [, pending] = (await knex.migrate.list({ migrationSource }).catch(() => [[], ['unknown']])) as [unknown[], unknown[]];
  if (pending.length === 0) return [];
  const [, applied] = (await knex.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}

/**
 * Brings an empty database's schema to exactly the given migrations (a backup's), so its rows fit;
 * refuses migrations this version does not know, and a database already past them.
 */
export async function migrateThrough(knex: Knex, names: string[]): Promise<void> {
  const known = await migrationSource.getMigrations([]);
  const unknown = names.filter((name) => !known.some((m) => m.name === name));
  if (unknown.length > 0) throw new Error(`the backup has migrations this version of sdx does not know (${unknown.join(', ')}): restore it with a version at least as new`);
  const applied = (await knex.schema.hasTable('knex_migrations')) ? await knex('knex_migrations').pluck<string[]>('name') : [];
  const beyond = applied.filter((name) => !names.includes(name));
  if (beyond.length > 0) throw new Error(`the database's schema is newer than the backup's (${beyond.join(', ')}): restore into a new, empty database`);
  const wanted = new Set(names);
  await knex.migrate.latest({
    migrationSource: { ...migrationSource, getMigrations: async (loaders) => (await migrationSource.getMigrations(loaders)).filter((m) => wanted.has(m.name)) },
  });
}

/** Migrates as the owner, then gives the runtime role its access to what the migrations made (src/db/roles.ts). */
export async function prepareSchema(owner: Database): Promise<string[]> {
  const applied = await migrateToLatest(owner.knex);
  if (owner.runtimeRole) await grantRuntimeAccess(owner.knex, owner.runtimeRole);
  return applied;
}
