import path from 'node:path';

/** Everything the service reads from its environment, read once. */
export interface Config {
  port: number;
  /** Public base address of the service, used in links such as a FHIR import's `review_url`. */
  baseUrl: string;
  /** A PostgreSQL server to use; when absent the service runs an embedded one in `dataDir`. */
  databaseUrl: string | undefined;
  /** Folder of the embedded PostgreSQL server and other local state. */
  dataDir: string;
  /** Port the embedded PostgreSQL server listens on (loopback only). */
  embeddedPgPort: number;
  /** Database name on the embedded server. */
  embeddedDatabase: string;
  /** Requests a key may make per 60-second window. */
  rateLimitPerMinute: number;
  /** Seconds a request body may take to arrive in full; a slower sender gets 408 and its connection closed. */
  bodyDeadlineSeconds: number;
  /** Megabytes of request bodies held in memory at once across all requests; past it, 503 `busy`. */
  bodyBufferMegabytes: number;
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
  return {
    port,
    baseUrl: (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR || 'data'),
    embeddedPgPort: integer('EMBEDDED_PG_PORT', 54329, env),
    embeddedDatabase: env.EMBEDDED_PG_DATABASE || 'sdx',
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 600, env),
    bodyDeadlineSeconds: integer('BODY_DEADLINE_SECONDS', 60, env),
    bodyBufferMegabytes: integer('BODY_BUFFER_MB', 128, env),
    validateResponses: env.VALIDATE_RESPONSES === '1' || env.NODE_ENV === 'test',
    accessLog: onOff('ACCESS_LOG', env.NODE_ENV !== 'test', env),
  };
}
