import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { RequestState } from './requestState.js';
import type { PortalState } from './portal/portalState.js';
import { accessLogger } from './logs.js';

/** Anything shaped like a key value (`sdx_` and base62), should a client put one in the address by mistake. */
const KEY_LIKE = /sdx_[0-9A-Za-z]{8,}/g;

/**
 * One JSON line per answered request on stdout: who asked what and how it ended, for operators.
 * It holds no secret (SECURITY.md, "Logs"): the path, with anything shaped like a key value cut short;
 * the names of the query parameters, not their values (`after` tokens or a sign-in page's `next` are
 * the client's); and the id of the API key or of the signed-in person. Never a key value, a cookie, a
 * header or a body.
 */
export function accessLog(log: Logger = accessLogger()): Middleware<RequestState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      log.info({
        request_id: ctx.state.requestId,
        method: ctx.method,
        path: ctx.path.replace(KEY_LIKE, 'sdx_…'),
        query: Object.keys(ctx.query),
        status: ctx.status,
        ms: Math.round(performance.now() - started),
        key_id: ctx.state.key?.keyId,
        user_id: (ctx.state as PortalState).user?.id,
      });
    }
  };
}
