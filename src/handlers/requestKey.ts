import { authenticateRequest, recheckRequest, type KeyRequest } from '../domain/apiKeys/admission.js';
import type { KoaContext } from './types.js';

/** `Authorization: Bearer <value>`; anything else present is a malformed key. */
function bearerOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  // "Bearer" with no value after it (clients send it when their key variable is empty) is a missing key.
  if (!value?.trim() || /^Bearer$/i.test(value.trim())) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value.trim());
  return match ? match[1] : value;
}

/**
 * The request's key, authenticated from its headers and the request counted, once per request: app.ts
 * asks first for a request with a body, before reading a byte of it, and the security step of
 * openapi-backend then gets the same answer from `ctx.state.keyRequest`.
 */
export function keyRequestOf(ctx: KoaContext): Promise<KeyRequest> {
  ctx.state.keyRequest ??= authenticateRequest(ctx.state.services.keyLookup, bearerOf(ctx.request.headers.authorization), new Date());
  return ctx.state.keyRequest;
}

/**
 * Once a request's body has arrived, its key and study are looked up again (without counting the request
 * again), and the call is decided on them as they are then: a key revoked, expired or stopped while the body
 * arrived is refused with its 401, and a key whose maker lost a site or was blinded meanwhile, or whose study
 * was locked or had its API switched off, reaches only what it may reach now (recheckRequest).
 */
export function recheckAfterBody(ctx: KoaContext): void {
  const counted = keyRequestOf(ctx);
  ctx.state.keyRequest = counted.then((request) => recheckRequest(ctx.state.services.keyLookup, bearerOf(ctx.request.headers.authorization), new Date(), request));
}
