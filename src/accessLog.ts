import type { Middleware } from 'koa';
import type { RequestState } from './handlers/requestState.js';
import type { PortalState } from './portal/portalState.js';

/** Anything shaped like a key value (`sdx_` and base62), should a client put one in the address by mistake. */
const KEY_LIKE = /sdx_[0-9A-Za-z]{8,}/g;

/**
 * A writer that gathers the lines of one turn of the event loop and writes them to stdout at once.
 * stdout on a pipe or a file is written synchronously, one system call per write, and under load a
 * call per request cost the service as much as its rate-limit bookkeeping (bench/README.md). The lines
 * still go out before the process waits for anything, and those of the last turn on exit.
 */
function linesToStdout(): (line: string) => void {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    process.stdout.write(text);
  };
  process.on('exit', flush);
  return (line) => {
    if (pending.push(line) === 1) setImmediate(flush);
  };
}

/**
 * One JSON line per answered request on stdout: who asked what and how it ended, for operators.
 * It holds no secret (SECURITY.md, "Logs"): the path, with anything shaped like a key value cut short;
 * the names of the query parameters, not their values (`after` tokens or a sign-in page's `next` are
 * the client's); and the id of the API key or of the signed-in person. Never a key value, a cookie, a
 * header or a body.
 */
export function accessLog(write: (line: string) => void = linesToStdout()): Middleware<RequestState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      write(`${JSON.stringify({
        level: 'info',
        at: new Date().toISOString(),
        request_id: ctx.state.requestId,
        method: ctx.method,
        path: ctx.path.replace(KEY_LIKE, 'sdx_…'),
        query: Object.keys(ctx.query),
        status: ctx.status,
        ms: Math.round(performance.now() - started),
        key_id: ctx.state.key?.keyId,
        user_id: (ctx.state as PortalState).user?.id,
      })}\n`);
    }
  };
}
