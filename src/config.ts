import path from 'node:path';

/** Everything the service reads from its environment, read once. */
export interface Config {
  port: number;
  /** Public base address of the service, used in links such as a FHIR import's `review_url`. */
  baseUrl: string;
  /** A PostgreSQL server to use, as the runtime role the service serves with; when absent the service runs an embedded one in `dataDir`. */
  databaseUrl: string | undefined;
  /** With `databaseUrl`: the same database as the owner of its schema, for migrations; when absent `databaseUrl` is used for both. */
  databaseOwnerUrl: string | undefined;
  /** Folder of the embedded PostgreSQL server and other local state. */
  dataDir: string;
  /**
   * Port number of the embedded PostgreSQL server's Unix socket; it listens on no TCP port, and its socket is
   * in the data folder, so no default can collide. A process joining a running server takes it from the server.
   */
  embeddedPgPort: number | undefined;
  /** Database name on the embedded server. */
  embeddedDatabase: string;
  /** Requests a key may make per 60-second window. */
  rateLimitPerMinute: number;
  /** Checks every response against the spec and fails loudly; on in tests and development. */
  validateResponses: boolean;
  /** One line per request on stdout (src/accessLog.ts); off by default in tests, whose output it would drown. */
  accessLog: boolean;
}

function integer(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

function onOff(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'on' && raw !== 'off') throw new Error(`${name} must be on or off, got "${raw}"`);
  return raw === 'on';
}

/** Reads the configuration from the environment; throws at start-up on a malformed value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer('PORT', 8080, env);
  if (env.DATABASE_OWNER_URL && !env.DATABASE_URL) throw new Error('DATABASE_OWNER_URL is the owner\'s address of the DATABASE_URL database: set DATABASE_URL too');
  return {
    port,
    baseUrl: (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseOwnerUrl: env.DATABASE_OWNER_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR || 'data'),
    embeddedPgPort: env.EMBEDDED_PG_PORT ? integer('EMBEDDED_PG_PORT', 0, env) : undefined,
    embeddedDatabase: env.EMBEDDED_PG_DATABASE || 'sdx',
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 600, env),
    validateResponses: env.VALIDATE_RESPONSES === '1' || env.NODE_ENV === 'test',
    accessLog: onOff('ACCESS_LOG', env.NODE_ENV !== 'test', env),
  };
}
