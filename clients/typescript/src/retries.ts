import { SdxApiError } from './client.js';

export interface RetryOptions {
  /** Attempts in all, the first one included (default 4). */
  attempts?: number;
  /** The longest wait before an attempt, in seconds (default 60): a `Retry-After` beyond it ends the retries. */
  maxWaitSeconds?: number;
  /** How to wait; tests pass their own (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs one write (enrolment, records, FHIR) and retries it without ever writing twice: every attempt
 * carries the same `Idempotency-Key`, so when an answer was lost after the service had committed (a
 * dropped connection, a proxy's time-out) the next attempt gets that first answer back, marked
 * `Idempotent-Replayed: true`, and changes nothing.
 *
 * Only what may succeed later is retried: 429 `rate_limited` and 503 `unavailable` after their
 * `Retry-After`, and a request that got no answer at all (fetch rejects with a `TypeError`) after 1, 2,
 * 4 … seconds. Any other refusal is thrown at once, as is the last attempt's.
 *
 * ```ts
 * const result = await withIdempotentRetries((key) => unwrap(client.POST('/api/v1/studies/{study_code}/records', {
 *   params: { path: { study_code: 'DEMO' }, header: { 'Idempotency-Key': key } }, body: { records },
 * })));
 * ```
 */
export async function withIdempotentRetries<T>(write: (idempotencyKey: string) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 4;
  const maxWaitSeconds = options.maxWaitSeconds ?? 60;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const idempotencyKey = globalThis.crypto.randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      return await write(idempotencyKey);
    } catch (error) {
      const wait = secondsBeforeRetry(error, attempt);
      if (attempt >= attempts || wait === undefined || wait > maxWaitSeconds) throw error;
      await sleep(wait * 1000);
    }
  }
}

/** Seconds to wait before trying again after `error`, or undefined when trying again cannot help. */
function secondsBeforeRetry(error: unknown, attempt: number): number | undefined {
  if (error instanceof SdxApiError) {
    if (error.status !== 429 && error.status !== 503) return undefined;
    return error.retryAfter ?? 2 ** (attempt - 1);
  }
  // fetch's own failure: no answer came, so the write may or may not have been made.
  return error instanceof TypeError ? 2 ** (attempt - 1) : undefined;
}
