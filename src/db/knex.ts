import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config.js';
import { NoEmbeddedDatabaseError, startEmbedded, stopEmbeddedIfUnused } from './embedded.js';
import { holdPresence } from './presence.js';
import { provisionRoles, withDatabase, withUser } from './roles.js';

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
  /**
   * On a connection as the owner: the runtime role to give access to the tables after migrations
   * (src/db/roles.ts), or undefined when the service uses one role for both (a DATABASE_URL without DATABASE_OWNER_URL).
   */
  runtimeRole?: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Whether a data folder without an embedded database may be given a new, empty one (the service, `sdx migrate`, `sdx demo`). */
  create?: boolean;
}

/** How long closing waits for the server to answer the question whether others still use it. */
const CLOSE_QUERY_MS = 2_000;

/** Ensures a database exists on a server, connecting to its maintenance database `postgres`. */
async function ensureDatabase(adminUrl: string, name: string, create: boolean): Promise<boolean> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount !== 0) return true;
    if (!create) return false;
    await admin.query(`create database "${name.replace(/"/g, '""')}"`).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error; // created meanwhile by another process
    });
    return true;
  } finally {
    await admin.end();
  }
}

interface Addresses {
  runtime: string;
  owner: string;
  runtimeRole: string | undefined;
  /** The embedded server's superuser address, when the database is the embedded one. */
  embeddedAdmin?: string;
}

/** The user name of a connection string. */
function userOf(url: string): string | undefined {
  return decodeURIComponent(url.match(/^postgres(?:ql)?:\/\/([^:@/]+)[^@/]*@/)?.[1] ?? '') || undefined;
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
    track: (connection: PooledClient, done: (error: Error | null, connection: PooledClient) => void): void => {
      open.set(connection.__knexUid, connection);
      connection.once('end', () => open.delete(connection.__knexUid));
      done(null, connection);
    },
    onQueryError: (error: Error, query: { __knexUid?: string }): void => {
      if (!/Query read timeout$/.test(error.message)) return;
      open.get(query.__knexUid ?? '')?.end().catch(() => undefined);
    },
  };
}

/**
 * Where the runtime role and the owner connect. With DATABASE_URL, the service's role is that URL's,
 * and the owner's is DATABASE_OWNER_URL's (the same when it is not set). The embedded server is
 * started or joined here, and its database and both roles made if missing.
 */
async function locate(config: Config, create: boolean): Promise<Addresses> {
  if (config.databaseUrl) {
    const owner = config.databaseOwnerUrl ?? config.databaseUrl;
    const runtimeRole = userOf(config.databaseUrl);
    return { runtime: config.databaseUrl, owner, runtimeRole: runtimeRole !== userOf(owner) ? runtimeRole : undefined };
  }
  const server = await startEmbedded(config.dataDir, { port: config.embeddedPgPort, create });
  try {
    if (!(await ensureDatabase(server.adminUrl, config.embeddedDatabase, create))) throw new NoEmbeddedDatabaseError(config.dataDir);
    const roles = await provisionRoles(server.adminUrl, config.embeddedDatabase);
    const url = withDatabase(server.adminUrl, config.embeddedDatabase);
    return { runtime: withUser(url, roles.runtime), owner: withUser(url, roles.owner), runtimeRole: roles.runtime, embeddedAdmin: server.adminUrl };
  } catch (error) {
    if (server.started) await stopEmbeddedIfUnused(config.dataDir, 0);
    throw error;
  }
}

/** The number of client connections to the embedded server other than this process's; 0 when the server does not answer. */
async function otherClients(adminUrl: string, ours: string[]): Promise<number> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: CLOSE_QUERY_MS, query_timeout: CLOSE_QUERY_MS });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    const { rows } = await admin.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid() and not (application_name = any($1))",
      [ours],
    );
    return rows[0]?.n ?? 0;
  } catch {
    return 0;
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function open(config: Config, as: 'runtime' | 'owner', poolSize: number, options: OpenOptions): Promise<Database> {
  const addresses = await locate(config, options.create ?? false);
  const url = addresses[as];
  // Tagging this process's connections lets `close` tell them from other processes' ones.
  const applicationName = `sdx-${process.pid}-${Date.now().toString(36)}${as === 'owner' ? '-owner' : ''}`;
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
  const admin = addresses.embeddedAdmin;
  const presence = admin ? await holdPresence(url, `${applicationName}-presence`) : undefined;
  return {
    knex,
    url,
    runtimeRole: as === 'owner' ? addresses.runtimeRole : undefined,
    async close() {
      // Every step is bounded, so that closing ends whatever state the server is in (even gone).
      const others = admin ? await otherClients(admin, [applicationName, presence!.applicationName]) : 0;
      await knex.destroy();
      await presence?.end();
      if (admin) await stopEmbeddedIfUnused(config.dataDir, others);
    },
  };
}

/**
 * Opens the database as the service's runtime role, which serves requests: `DATABASE_URL` when
 * set, otherwise the embedded server in the data folder, which is started or joined here and
 * stopped on close when this process was its last user.
 */
export function openDatabase(config: Config, poolSize = 10, options: OpenOptions = {}): Promise<Database> {
  return open(config, 'runtime', poolSize, options);
}

/**
 * Opens the database as the owner of its schema, for migrations and the administration that
 * needs more than the runtime role may do (loading a study design, backups): `DATABASE_OWNER_URL`
 * (or `DATABASE_URL` when that is not set), or the embedded server's owner role.
 */
export function openOwnerDatabase(config: Config, poolSize = 2, options: OpenOptions = {}): Promise<Database> {
  return open(config, 'owner', poolSize, options);
}
