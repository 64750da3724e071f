import { onceForKey } from '../domain/idempotency/onceForKey.js';
import type { AllStores } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import type { KoaContext, OperationId } from './types.js';

/**
 * Answers a write request at most once per `Idempotency-Key` (spec: "Retries without duplicates").
 * Call it inside the request's transaction, with stores bound to it. Without the header, or without a
 * `request` (a dry run, which changes nothing and so keeps nothing), the answer is simply made.
 * A replay is the first answer as the key may see it now (`seen`), marked with `Idempotent-Replayed: true`.
 *
 * @param request - what makes two requests the same: the parsed body and the parameters that change the outcome
 * @param answer - makes the answer; it is kept as JSON, so it holds nothing a JSON round trip changes
 * @param seen - the kept answer as the key may see it now, or the refusal (onceForKey)
 */
export async function answerOnce<R extends { status: number; body: unknown; headers?: Record<string, string> }>(
  ctx: KoaContext,
  stores: Pick<AllStores, 'idempotencyKeys'>,
  request: { operation: OperationId; input: unknown } | undefined,
  answer: () => Promise<R>,
  seen: (kept: R) => Promise<R>,
): Promise<R> {
  // openapi-backend has checked the value against the spec's pattern; an absent header reads as ''.
  const key = ctx.get('idempotency-key');
  if (!key || !request) return answer();
  const scope = { apiKeyId: authenticated(ctx).key.keyId, operation: request.operation, key };
  const { result, replayed } = await onceForKey(stores.idempotencyKeys, scope, request.input, answer, seen);
  return replayed ? { ...result, headers: { ...result.headers, 'Idempotent-Replayed': 'true' } } : result;
}

/**
 * `seen` for an answer that holds nothing but what the key sent and what became of it (an enrolment's
 * subject and site, each record's outcome): replayed as it was kept.
 */
export const asKept = <R>(kept: R): Promise<R> => Promise.resolve(kept);
