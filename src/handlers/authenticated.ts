import type { KeyContext } from '../domain/apiKeys/keyContext.js';
import type { Study } from '../domain/stores.js';
import type { Services } from '../requestState.js';
import type { KoaContext } from './types.js';

/**
 * The key and study that the security step attached to the request. Every keyed operation runs
 * after that step, so their absence is a wiring bug, not a client error.
 */
export function authenticated(ctx: KoaContext): { key: KeyContext; study: Study; services: Services } {
  const { key, study, services } = ctx.state;
  if (!key || !study) throw new Error('operation reached without an authenticated key and study');
  return { key, study, services };
}

/** The API key as the actor of a change: the audit trail shows "<key name> (API)". */
export function keyActor(key: KeyContext) {
  return { kind: 'api_key' as const, keyId: key.keyId, keyName: key.keyName, makerId: key.makerId };
}

/** What a key's writes reach: its sites, and unblinded-team forms only if its maker is unblinded. */
export function keyWriteAccess(key: KeyContext) {
  return { siteIds: key.siteIds, unblinded: key.makerUnblinded };
}
