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
  /** Seconds a request body may take to arrive in full; a slower sender gets 408 and its connection closed. */
  bodyDeadlineSeconds: number;
  /** Megabytes of request bodies held in memory at once across all requests; past it, 503 `busy`. */
  bodyBufferMegabytes: number;
  /** Checks every response against the spec and fails loudly; on in tests and development. */
  validateResponses: boolean;
  /** One line per request on stdout (src/accessLog.ts); off by default in tests, whose output it would drown. */
  accessLog: boolean;
  /**
   * Longest a single SQL statement may run (PostgreSQL's `statement_timeout`); the client gives up on an
   * answer a second later, which is what turns a frozen database into a 503 instead of a hang.
   */
  dbStatementTimeoutMs: number;
  /** Longest wait to open a connection to PostgreSQL before answering 503. */
  dbConnectTimeoutMs: number;
  /**
   * Longest wait for a free connection of the pool before answering 503. Longer than the others: under
   * load, waiting for a turn is normal, and a frozen database already fails each connection's statements.
   */
  dbAcquireTimeoutMs: number;
  /** A session left inside a transaction without a statement this long is ended by PostgreSQL, freeing its locks. */
  dbIdleInTransactionTimeoutMs: number;
  /** Folder of the signed audit checkpoints, one append-only file per study: outside the database on purpose. */
  auditCheckpointDir: string;
  /** Ed25519 private key that signs the checkpoints (created 0600 on first use). */
  auditSigningKeyFile: string;
  /** Minutes between the service's checkpoints of every study; undefined when switched off. */
  auditCheckpointMinutes: number | undefined;
  /** `WEBHOOKS_ALLOW_INSECURE=1`: webhooks may go to `http`, loopback and private addresses (development and tests only). */
  webhooksAllowInsecure: boolean;
  /** Seconds a receiver has to answer a webhook before the attempt counts as failed. */
  webhookTimeoutSeconds: number;
  /** Milliseconds between looks at the outbox when no notification came (retries falling due, a lost LISTEN connection). */
  webhookPollMs: number;
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
  const dataDir = path.resolve(env.DATA_DIR || 'data');
  return {
    port,
    baseUrl: (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseOwnerUrl: env.DATABASE_OWNER_URL || undefined,
    dataDir,
    embeddedPgPort: env.EMBEDDED_PG_PORT ? integer('EMBEDDED_PG_PORT', 0, env) : undefined,
    embeddedDatabase: env.EMBEDDED_PG_DATABASE || 'sdx',
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 600, env),
    bodyDeadlineSeconds: integer('BODY_DEADLINE_SECONDS', 60, env),
    bodyBufferMegabytes: integer('BODY_BUFFER_MB', 128, env),
    validateResponses: env.VALIDATE_RESPONSES === '1' || env.NODE_ENV === 'test',
    accessLog: onOff('ACCESS_LOG', env.NODE_ENV !== 'test', env),
    dbStatementTimeoutMs: integer('DB_STATEMENT_TIMEOUT_MS', 5_000, env),
    dbConnectTimeoutMs: integer('DB_CONNECT_TIMEOUT_MS', 3_000, env),
    dbAcquireTimeoutMs: integer('DB_ACQUIRE_TIMEOUT_MS', 10_000, env),
    dbIdleInTransactionTimeoutMs: integer('DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, env),
    auditCheckpointDir: path.resolve(env.AUDIT_CHECKPOINT_DIR || path.join(dataDir, 'audit-checkpoints')),
    auditSigningKeyFile: path.resolve(env.AUDIT_SIGNING_KEY_FILE || path.join(dataDir, 'audit-signing-key.pem')),
    auditCheckpointMinutes: env.AUDIT_CHECKPOINT_MINUTES === 'off' ? undefined : integer('AUDIT_CHECKPOINT_MINUTES', 10, env),
    webhooksAllowInsecure: env.WEBHOOKS_ALLOW_INSECURE === '1',
    webhookTimeoutSeconds: integer('WEBHOOK_TIMEOUT_SECONDS', 10, env),
    webhookPollMs: integer('WEBHOOK_POLL_MS', 1_000, env),
  };
}
