/**
 * The rate limit (interface description, "Limits": 600 requests a minute, over it 429). Each key may be let
 * through at most that many requests in any 60 seconds: a sliding log of the instants of the requests it
 * was let through in the last minute, shared by every service process (src/db/rateLimits.ts). A request
 * refused with 429 takes no place in it, so a key that keeps sending is let through again as soon as its
 * oldest request is a minute old.
 */
export const RATE_WINDOW_MS = 60_000;

/** A key's last minute as counted with the current request: its requests in it, this one included, and when the oldest leaves it. */
export interface RateWindow {
  points: number;
  /** When the oldest request let through in the last minute leaves it, epoch milliseconds: a place is free again then. */
  expire: number;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a place in the minute is free again. */
  resetSeconds: number;
}

export function rateDecision(window: RateWindow, perMinute: number, now = Date.now()): RateDecision {
  return {
    allowed: window.points <= perMinute,
    limit: perMinute,
    remaining: Math.max(0, perMinute - window.points),
    resetSeconds: Math.max(1, Math.ceil((window.expire - now) / 1000)),
  };
}
