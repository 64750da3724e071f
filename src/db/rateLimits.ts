import type { Knex } from 'knex';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

export interface RateLimiter {
  /**
   * Counts one request of a key: against its rate window, and in the key's request count and time of
   * last use (the keys table), whether or not the window still allows it.
   */
  consume(keyId: number): Promise<RateDecision>;
}

const WINDOW_MS = 60_000;

/**
 * Requests per key in fixed 60-second windows, counted in PostgreSQL so that every service process on
 * the same database shares one count. A window starts at a key's first request after the previous
 * window ended. The table keeps rate-limiter-flexible's layout (`key:<id>`, points, expiry in epoch ms)
 * and its upsert; the key's request counter is bumped in the same statement, because two statements
 * per request (two round trips and two commits) were a fifth of the design call's cost under load
 * (bench/README.md).
 */
export function createRateLimiter(knex: Knex, perMinute: number): RateLimiter {
  return {
    async consume(keyId) {
      const now = Date.now();
      // Lock order: the key's row, then its window's row, the same for every request, so concurrent
      // requests of one key queue rather than deadlock.
      const { rows } = await knex.raw(
        `with counted as (
           update api_keys set request_count = request_count + 1, last_used_at = greatest(last_used_at, now()) where id = :keyId
         )
         insert into rate_limits as r (key, points, expire) values (:key, 1, :expire)
         on conflict (key) do update set
           points = case when r.expire <= :now then 1 else r.points + 1 end,
           expire = case when r.expire <= :now then excluded.expire else r.expire end
         returning points, expire`,
        { keyId, key: `key:${keyId}`, expire: now + WINDOW_MS, now },
      ).options({ name: 'sdx_rate_window' }); // prepared: it runs on every request
      const { points, expire } = rows[0] as { points: number; expire: number };
      return {
        allowed: points <= perMinute,
        limit: perMinute,
        remaining: Math.max(0, perMinute - points),
        resetSeconds: Math.max(1, Math.ceil((Number(expire) - Date.now()) / 1000)),
      };
    },
  };
}
