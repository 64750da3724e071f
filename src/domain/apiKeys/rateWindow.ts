/**
 * The rate limit (interface description, "Limits": 600 requests a minute, over it 429). Requests are
 * counted per key in fixed 60-second windows shared by every service process (src/db/rateLimits.ts);
 * a window starts at a key's first request after the previous one ended.
 */
export const RATE_WINDOW_MS = 60_000;

/** A key's window as counted with the current request: requests in it so far, this one included, and when it ends. */
export interface RateWindow {
  points: number;
  /** End of the window, epoch milliseconds. */
  expire: number;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
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
