/**
 * When a failed delivery is tried again (issue 22.5): exponential backoff from 5 seconds, doubling up to
 * an hour between attempts, with a little jitter so receivers coming back are not hit all at once; after
 * 24 hours of failures the subscription is marked `failing` and waits for a manager.
 */
const FIRST_RETRY_MS = 5_000;
export const LONGEST_RETRY_MS = 3_600_000;
const RETRY_FOR_MS = 24 * 3_600_000;

/** The wait after the `attempts`-th failed attempt (1 for the first). */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 20));
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** Whether the delivery has failed for so long that its subscription is marked failing. */
export function givesUp(firstFailedAt: Date, now: Date): boolean {
  return now.getTime() - firstFailedAt.getTime() >= RETRY_FOR_MS;
}
