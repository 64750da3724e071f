import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * The service's two logs, both JSON lines written by pino: the access log on stdout and the failure log on
 * stderr. A line reads `{"level":"info","at":"<ISO time>",…}`; no process id or host name, which the
 * platform's log collector adds. Neither log is ever given a header, a cookie or a body (SECURITY.md,
 * "Logs"), and pino's redaction censors `Authorization` and cookies all the same, should a future line
 * carry a request's or response's headers.
 */
/**
 * Where a line could carry headers: at its top level, or as the request or response it is about. Named one by
 * one rather than with a wildcard (`*.headers.authorization`), which pino's redaction runs as a search on
 * every line: five times the cost of writing an access log line (bench/README.md, "Access log").
 */
const REDACTED = ['', 'req.', 'res.', 'request.', 'response.']
  .flatMap((owner) => ['authorization', 'cookie', '["set-cookie"]'].map((header) => `${owner}headers${header.startsWith('[') ? '' : '.'}${header}`));

function jsonLines(destination: DestinationStream): Logger {
  return pino({
    base: undefined,
    timestamp: () => `,"at":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED, censor: '[redacted]' },
  }, destination);
}

/**
 * The access log: buffered and written asynchronously (one system call for many lines, not one a request,
 * which under load cost the service as much as its rate-limit bookkeeping); pino flushes what is left
 * when the process exits.
 */
export function accessLogger(): Logger {
  return jsonLines(pino.destination({ dest: 1, sync: false, minLength: 4096 }));
}

/** The failure log: rare lines, written at once through process.stderr, so nothing of a crash is lost. */
export const failureLogger: Logger = jsonLines(process.stderr);
