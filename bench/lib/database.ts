/**
 * The bench database. In order of preference: `BENCH_DATABASE_URL` (a throwaway database, emptied
 * first); a throwaway database made for this run on the machine's PostgreSQL server at 127.0.0.1:5432
 * (as .ci/run does with scripts/testDatabase.mjs) and dropped at the end; otherwise the embedded server
 * in a data folder of its own (test-output/bench-pg), so `make run`'s data is never touched;
 * BENCH_EMBEDDED=1 chooses the embedded server even when the other is there.
 */
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { openDatabase, openOwnerDatabase, type Database } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrator.js';

export interface BenchDatabase extends Database {
  /** Where the run's data lives, for the report. */
  where: string;
  /** Brings the database to rest before a scenario: see settle. */
  settle(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function emptyAllTables(db: Database): Promise<void> {
  const { rows } = await db.knex.raw(`select tablename from pg_tables where schemaname = current_schema() and tablename not like 'knex_%'`);
  if (rows.length === 0) return;
  // The audit trail refuses TRUNCATE by trigger; its owner switches that off inside this transaction only.
  await db.knex.transaction(async (trx) => {
    await trx.raw('alter table audit_events disable trigger audit_events_no_truncate');
    await trx.raw(`truncate ${rows.map((r: { tablename: string }) => `"${r.tablename}"`).join(', ')} restart identity cascade`);
    await trx.raw('alter table audit_events enable trigger audit_events_no_truncate');
  });
}

/** How long settle waits at most for the autovacuum workers to finish. */
const SETTLE_MS = 60_000;

/**
 * A scenario starts on a database at rest. The ones before it leave work behind (100,000 records seeded
 * for the bulk read, thousands written by the records calls): autovacuum and the checkpoint of their WAL
 * then ran during the next scenario, on the same two cores, and counted against whichever of its runs
 * they fell in (the design call measured 0.31-0.39 of bare Koa after them, 0.40-0.45 alone). Vacuumed,
 * checkpointed and with no autovacuum worker left on the database, each scenario pays for its own work.
 */
async function settle(db: Database): Promise<void> {
  await db.knex.raw('vacuum (analyze)');
  // On a connection of its own, without the service's statement limit: on a busy machine the checkpoint of
  // a scenario's writes outlasts it, and the run failed there.
  await admin(db.url, 'checkpoint');
  const until = Date.now() + SETTLE_MS;
  while (Date.now() < until) {
    const { rows } = await db.knex.raw(`select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker' and datname = current_database()`);
    if (rows[0].n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function openBenchDatabase(): Promise<BenchDatabase> {
  const given = process.env.BENCH_DATABASE_URL;
  let db: Database;
  let where: string;
  let drop: (() => Promise<void>) | undefined;
  if (given) {
    db = await openDatabase(loadConfig({ DATABASE_URL: given }), 10);
    where = `BENCH_DATABASE_URL (${new URL(given).pathname.slice(1)}, emptied first)`;
  } else if (process.env.BENCH_EMBEDDED !== '1' && await reachable(LOCAL_SERVER)) {
    // Engineers sharing one server keep to names of their own (BENCH_DATABASE_PREFIX).
    const name = `${process.env.BENCH_DATABASE_PREFIX ?? 'sdx_bench'}_${process.pid}_${Date.now().toString(36)}`;
    await admin(LOCAL_SERVER, `create database ${name}`);
    db = await openDatabase(loadConfig({ DATABASE_URL: LOCAL_SERVER.replace(/\/postgres$/, `/${name}`) }), 10);
    where = `throwaway database ${name} on the PostgreSQL server at 127.0.0.1:5432`;
    drop = () => admin(LOCAL_SERVER, `drop database if exists ${name} with (force)`);
  } else {
    const config = loadConfig({ DATA_DIR: path.resolve('test-output/bench-pg'), EMBEDDED_PG_DATABASE: 'sdx_bench' });
    db = await openOwnerDatabase(config, 10, { create: true });
    where = `embedded PostgreSQL (test-output/bench-pg): ${process.env.BENCH_EMBEDDED === '1' ? 'BENCH_EMBEDDED=1' : '127.0.0.1:5432 was not reachable'}`;
  }
  await migrateToLatest(db.knex);
  await emptyAllTables(db);
  const { rows } = await db.knex.raw('show server_version');
  return {
    ...db,
    where: `${where}, PostgreSQL ${rows[0].server_version}`,
    settle: () => settle(db),
    async close() {
      await db.close();
      await drop?.();
    },
  };
}
