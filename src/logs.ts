import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Where a line could carry headers: at its top level, or as the request or response it is about. Named one by
 * one rather than with a wildcard (`*.headers.authorization`), which pino's redaction runs as a search on
 * every line: five times the cost of writing an access log line (bench/README.md, "Access log").
 */
const REDACTED = ['', 'req.', 'res.', 'request.', 'response.']
  .flatMap((owner) => ['.authorization', '.cookie', '["set-cookie"]'].map((header) => `${owner}headers${header}`));

/**
 * The service's two logs, both JSON lines written by pino: the access log on stdout and the failure log on
 * stderr. A line reads `{"level":"info","at":"<ISO time>",…}`; no process id or host name, which the
 * platform's log collector adds. Neither log is ever given a header, a cookie or a body (SECURITY.md,
 * "Logs"), and pino's redaction censors `Authorization` and cookies all the same, should a future line
 * carry a request's or response's headers.
 */
function jsonLines(destination: DestinationStream): Logger {
  return pino({
    base: undefined,
    timestamp: () => `,"at":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED, censor: '[redacted]' },
  }, destination);
}

/**
 * Stdout, written once a turn of the event loop: the lines of the requests answered in one turn go out
 * together, in one system call, before the process waits for anything. A write a line cost the service
 * under load as much as its rate-limit bookkeeping, and pino's own asynchronous destination (sonic-boom)
 * hands each 4 KB to the thread pool at a cost of its own (bench/README.md, "Access log"). The lines of the
 * last turn are written when the process exits.
 */
function stdoutEachTurn(): DestinationStream {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    process.stdout.write(text);
  };
  process.on('exit', flush);
  return {
    write(line: string) {
      if (pending.push(line) === 1) setImmediate(flush);
    },
  };
}

/** Stdout as the access log writes it: one for the process, whatever number of apps share it. */
let accessLines: DestinationStream | undefined;

/** The access log, on stdout. */
export function accessLogger(): Logger {
  return jsonLines((accessLines ??= stdoutEachTurn()));
}

/** The failure log: rare lines, written at once through process.stderr, so nothing of a crash is lost. */
export const failureLogger: Logger = jsonLines(process.stderr);
