import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config.js';
import { startEmbedded, stopEmbeddedIfUnused } from './embedded.js';
import { holdPresence } from './presence.js';

// Dates are calendar dates in a clinical record: keep them as 'YYYY-MM-DD' strings, never shifted by a time zone.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);
// bigint counters (request counts, ids) fit easily in a JS number for this service's lifetime.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/**
 * Knex prints its warnings on stdout, among the access log's JSON lines, and while the database is down
 * that is a stack trace for every connection attempt: here each is one JSON line on stderr, without the stack.
 */
const knexLog = {
  warn: (message: unknown) => {
    process.stderr.write(`${JSON.stringify({ level: 'warn', at: new Date().toISOString(), source: 'database', message: String(message).split('\n')[0] })}\n`);
  },
};

export interface Database {
  knex: Knex;
  /** Connection string of the server in use (the embedded one included), for child processes and tools. */
  url: string;
  close(): Promise<void>;
}

/** Ensures a database exists on a server, connecting to its maintenance database `postgres`. */
async function ensureDatabase(serverUrl: URL, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: Object.assign(new URL(serverUrl), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      await admin.query(`create database "${name.replace(/"/g, '""')}"`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by another process
      });
    }
  } finally {
    await admin.end();
  }
}

/**
 * Opens the database of the configuration: `DATABASE_URL` when set, otherwise the embedded
 * server in the data folder, which is started or joined here and stopped on close when this
 * process was its last user.
 */
export async function openDatabase(config: Config, poolSize = 10): Promise<Database> {
  let url: string;
  let embedded = false;
  if (config.databaseUrl) {
    url = config.databaseUrl;
  } else {
    const server = await startEmbedded(config.dataDir, config.embeddedPgPort);
    const serverUrl = new URL(`postgres://${server.user}:${server.password}@127.0.0.1:${server.port}/postgres`);
    await ensureDatabase(serverUrl, config.embeddedDatabase);
    url = Object.assign(serverUrl, { pathname: `/${config.embeddedDatabase}` }).toString();
    embedded = true;
  }
  // Tagging this process's connections lets `close` tell them from other processes' ones.
  const applicationName = `sdx-${process.pid}-${Date.now().toString(36)}`;
  const knex = knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: applicationName },
    pool: { min: 0, max: poolSize },
    log: knexLog,
  });
  const presence = embedded ? await holdPresence(url, `${applicationName}-presence`) : undefined;
  return {
    knex,
    url,
    async close() {
      let others = 0;
      if (embedded) {
        const result = await knex
          .raw("select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and application_name not in (?, ?)", [applicationName, presence!.applicationName])
          .catch(() => ({ rows: [{ n: 0 }] }));
        others = result.rows[0].n;
      }
      await knex.destroy();
      await presence?.end();
      if (embedded) await stopEmbeddedIfUnused(config.dataDir, others);
    },
  };
}
