/** PostgreSQL error codes the stores translate into domain errors. */
export const UNIQUE_VIOLATION = '23505';

export function isPgError(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === code;
}

/**
 * PostgreSQL unreachable, shutting down, or too slow to answer within the service's limits (src/config.ts,
 * `DB_*_TIMEOUT_MS`): the client should retry, not fix its request. Both the API and the portal answer it
 * with 503 and Retry-After.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = (typeof error === 'object' && error !== null ? error : {}) as { code?: string; message?: string; name?: string; syscall?: string };
  // ENOENT on connect: the embedded server's Unix socket went with the server (src/db/embedded.ts).
  if (e.code === 'ENOENT' && e.syscall === 'connect') return true;
  // 57014: a statement cancelled by statement_timeout; 57P0x: the server shutting down; 08xxx: the connection lost.
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57014', '57P01', '57P02', '57P03', '08006', '08001', '08003'].includes(e.code ?? '')
    || e.name === 'KnexTimeoutError'
    || /Connection terminated|connection to server|Client has encountered a connection error|Client was closed|Query read timeout|timeout exceeded when trying to connect/i.test(e.message ?? '');
}
