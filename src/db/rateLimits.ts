/**
 * Counting a request: in its key's rate window (src/domain/apiKeys/rateWindow.ts), kept in PostgreSQL so
 * that every service process on the same database shares one count, and in the key's request counter
 * and time of last use (the keys table). The table keeps rate-limiter-flexible's layout (`key:<id>`,
 * points, expiry in epoch ms) and its upsert.
 *
 * It is not a statement of its own: it runs inside the key's query (findKeyForRequest), because each
 * round trip to the database costs a request more than the SQL it runs (bench/README.md).
 */
export const TABLE = 'rate_limits';

/**
 * Common table expressions that count one request of each key listed by the expression named `keys`
 * (a column `id`). `win` gives the window as counted, `points` and `expire`. Bindings: `:now` (epoch
 * ms) and `:expire` (the end of a window opened now). Concurrent requests of one key queue on the
 * window's row, then on the key's: the same order for every request, so they never deadlock.
 */
export function countRequestSql(keys: string): string {
  return `win as (
      insert into ${TABLE} as r (key, points, expire) select 'key:' || id, 1, :expire from ${keys}
      on conflict (key) do update set
        points = case when r.expire <= :now then 1 else r.points + 1 end,
        expire = case when r.expire <= :now then excluded.expire else r.expire end
      returning points, expire
    ),
    counted as (
      update api_keys set request_count = request_count + 1, last_used_at = greatest(last_used_at, now())
      where id in (select id from ${keys})
    )`;
}
