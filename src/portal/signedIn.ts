import type { Next } from 'koa';
import type { Actor } from '../domain/actor.js';
import type { User } from '../domain/stores.js';
import type { PortalContext } from './portalState.js';

export const SIGN_IN_PATH = '/portal/sign-in';

/** Where a person goes after signing in: only an address of the portal itself, never another site. */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || !/^\/(p|portal)(\/|$)/.test(next) || /[\\\s]/.test(next)) return '/portal';
  return next;
}

/**
 * Guards every page but the sign-in form: a visitor who is not signed in is sent to sign in, with
 * the page asked for kept as `next`; no data is read before this passes.
 */
export async function signedIn(ctx: PortalContext, next: Next): Promise<void> {
  if (!ctx.state.user) {
    const back = ctx.method === 'GET' ? ctx.originalUrl : ctx.path;
    ctx.redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(safeNext(back))}`);
    ctx.status = 303;
    return;
  }
  await next();
}

/** The signed-in person; only reached behind `signedIn`. */
export function person(ctx: PortalContext): User {
  if (!ctx.state.user) throw new Error('portal page reached without a signed-in person');
  return ctx.state.user;
}

/** The signed-in person as the author of a change made on a page: the audit trail names them. */
export function portalActor(ctx: PortalContext): Actor {
  const user = person(ctx);
  return { kind: 'user', userId: user.id, name: user.name, via: 'portal' };
}
