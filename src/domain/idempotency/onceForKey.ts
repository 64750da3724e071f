import { DomainError } from '../errors.js';
import type { IdempotencyKeyStore, IdempotencyScope } from '../stores.js';
import { requestFingerprint } from './requestFingerprint.js';

/** How long a used `Idempotency-Key` keeps its first answer (spec: "Retries without duplicates"). */
const KEY_LIFETIME_HOURS = 24;

/**
 * Runs a write at most once per `Idempotency-Key`. Call it inside the write's own transaction: the
 * claim, the write and the kept answer then commit together or not at all, so a request that fails or
 * whose process dies keeps nothing and its retry runs anew. A concurrent request with the same key
 * waits on the claim until the first one ends, then replays its answer.
 *
 * A replay is the kept answer as the key may see it when the retry comes, never more: the key's maker may
 * have been blinded or lost a site since, the patient may have withdrawn consent to the use of their data,
 * and the retry of a write whose first answer never arrived would otherwise hand over what the read calls
 * no longer show.
 *
 * @param request - the request as the service understood it (parsed body, parameters that change the outcome)
 * @param run - the write; its result must survive a JSON round trip, since a replay returns the kept copy
 * @param seen - the kept result as the key may see it now; throws the refusal a new request on what it is
 *   about would get when the key may see none of it
 * @returns the write's result, or the first request's result when the key was used before with the same request
 * @throws DomainError `idempotency_key_reused` when the key was used with another request
 */
export async function onceForKey<T>(
  store: IdempotencyKeyStore,
  scope: IdempotencyScope,
  request: unknown,
  run: () => Promise<T>,
  seen: (kept: T) => Promise<T>,
): Promise<{ result: T; replayed: boolean }> {
  const fingerprint = requestFingerprint(scope.operation, request);
  const held = await store.claim(scope, fingerprint, KEY_LIFETIME_HOURS);
  if (held) {
    if (held.fingerprint !== fingerprint) throw new DomainError('idempotency_key_reused', { hours: KEY_LIFETIME_HOURS });
    return { result: await seen(held.result as T), replayed: true };
  }
  const result = await run();
  await store.keepResult(scope, result, KEY_LIFETIME_HOURS);
  return { result, replayed: false };
}
