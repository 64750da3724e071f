/**
 * Counting a request: in its key's rate window (src/domain/apiKeys/rateWindow.ts), kept in PostgreSQL so
 * that every service process on the same database shares one count, and in the key's request counter
 * and time of last use (the keys table). The table keeps rate-limiter-flexible's layout (`key:<id>`,
 * points, expiry in epoch ms) and its upsert.
 *
 * It is not a statement of its own: it runs inside the keys' query (findKeysForRequests), because each
 * round trip to the database costs a request more than the SQL it runs (bench/README.md).
 */
export const TABLE = 'rate_limits';

/**
 * Common table expressions that count requests of the keys listed, in key order, by the expression named
 * `keys` (columns `id` and `n`, the number of requests of that key). `win` gives each window as counted,
 * `key`, `points` and `expire`. Bindings: `:now` (epoch ms) and `:expire` (the end of a window opened
 * now). The windows' rows are locked in key order, then the keys' rows (an unreferenced expression runs
 * after the statement's own query), so concurrent statements queue rather than deadlock.
 */
export function countRequestSql(keys: string): string {
  return `win as (
      insert into ${TABLE} as r (key, points, expire) select 'key:' || id, n, :expire from ${keys} order by id
      on conflict (key) do update set
        points = case when r.expire <= :now then excluded.points else r.points + excluded.points end,
        expire = case when r.expire <= :now then excluded.expire else r.expire end
      returning key, points, expire
    ),
    counted as (
      update api_keys k set request_count = k.request_count + c.n, last_used_at = greatest(k.last_used_at, now())
      from ${keys} c where k.id = c.id
    )`;
}
