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
 * The limits that make a stopped-but-not-dead database a quick 503 rather than a request hanging for a minute
 * (issue 21.9). The server ends a statement at `statement_timeout`, so a live but overloaded database answers
 * with a clean error and keeps the connection; the client's own read timeout, a second later, covers the
 * server that cannot answer at all (a frozen host). A session idle inside a transaction (its client frozen)
 * is ended so its locks do not hold up everyone else.
 */
function connectionTimeouts(config: Config) {
  return {
    statement_timeout: config.dbStatementTimeoutMs,
    query_timeout: config.dbStatementTimeoutMs + 1_000,
    idle_in_transaction_session_timeout: config.dbIdleInTransactionTimeoutMs,
    connectionTimeoutMillis: config.dbConnectTimeoutMs,
  };
}

/** A pool connection as Knex hands it to `afterCreate`: pg's client, tagged with the id Knex reports in its query events. */
type PooledClient = pg.Client & { __knexUid: string };

/**
 * Ends a connection as soon as one of its statements got no answer within the read limit. pg reports the
 * timeout but keeps the connection waiting for that answer, so the transaction's ROLLBACK, and every later
 * statement the pool gave it, would each wait out the limit again behind it; ended, they fail at once and
 * the pool opens a fresh connection.
 */
function endingUnanswered() {
  const open = new Map<string, pg.Client>();
  return {
    track(connection: PooledClient, done: (error: Error | null, connection: PooledClient) => void): void {
      open.set(connection.__knexUid, connection);
      connection.once('end', () => open.delete(connection.__knexUid));
      done(null, connection);
    },
    onQueryError(error: Error, query: { __knexUid?: string }): void {
      if (!/Query read timeout$/.test(error.message)) return;
      open.get(query.__knexUid ?? '')?.end().catch(() => undefined);
    },
  };
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
  const unansweredConnections = endingUnanswered();
  const knex = knexFactory({
    client: 'pg',
    connection: {
      connectionString: url,
      application_name: applicationName,
      ...connectionTimeouts(config),
    },
    pool: { min: 0, max: poolSize, acquireTimeoutMillis: config.dbAcquireTimeoutMs, afterCreate: unansweredConnections.track },
    log: knexLog,
  });
  knex.on('query-error', unansweredConnections.onQueryError);
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
