import type { Knex } from 'knex';
import { RATE_WINDOW_MS, type RateWindow } from '../domain/apiKeys/rateWindow.js';

/**
 * Counting requests of working keys: in each key's sliding minute (src/domain/apiKeys/rateWindow.ts), kept
 * in PostgreSQL so that every service process on the same database shares one log, and in the key's
 * request counter and time of last use (the keys table). `hits` holds the instants (epoch ms) of the
 * requests let through in the last minute; `points` the number the last statement let through, `expire`
 * when the newest leaves the minute.
 */
export const TABLE = 'rate_limits';

/** One request to count: its key, and the instant it came. */
export interface CountRequest {
  keyId: number;
  at: Date;
}

/**
 * Counts a batch of requests (src/db/keyLookup.ts gathers them) in one statement, at the batch's latest
 * instant, and gives each its place in its key's minute. Several requests of one key are counted as if
 * they came one after the other, in the batch's order: each is let through while fewer than `limit`
 * requests were let through in the last 60 seconds, so no 60 seconds ever hold more than `limit` (no
 * double burst across a window's edge, issue 21.8). The key's row is locked by the upsert, and reads the
 * latest committed log, so statements of every process counting the same key queue one after the other.
 * Rows are written in key order, and keys' counters after them, so two batches sharing keys queue rather
 * than deadlock. A request refused with 429 still counts in the key's request counter, not in its minute.
 *
 * Its commit does not wait for the WAL to reach the disk (`synchronous_commit` off for this transaction
 * alone, set with the counts it concerns): the service waited on that flush for a quarter of its time
 * under load, and a database crash can then lose only the counts of its last fraction of a second (three
 * rounds of the WAL writer, 600 ms by default), which a rate limit can spare (SECURITY.md, API4).
 * Clinical writes and the audit trail keep waiting for theirs. So it runs on its own, never inside
 * another transaction, whose commit the setting would reach.
 */
export async function countRequests(db: Knex, requests: readonly CountRequest[], limit: number): Promise<RateWindow[]> {
  const now = Math.max(...requests.map((r) => r.at.getTime()));
  // A new key's row proposes as `points` the number of its requests in the batch, which the update reads
  // (as excluded.points) and replaces with the number let through; so that number is the least of points and hits.
  const { rows } = await db.raw(
    `with keys as materialized (
       select id, count(*)::int as n, set_config('synchronous_commit', 'off', true) as commit_mode
       from unnest(cast(:ids as int[])) as r(id) group by id order by id
     ),
     win as (
       insert into ${TABLE} as r (key, points, expire, hits)
       select 'key:' || id, n, cast(:now as bigint) + :window, array_fill(cast(:now as bigint), array[least(n, :limit)]) from keys order by id
       on conflict (key) do update set (points, hits, expire) = (
         select t.admitted, t.recent || array_fill(cast(:now as bigint), array[t.admitted]), excluded.expire
         from (select s.recent, greatest(0, least(excluded.points, :limit - cardinality(s.recent))) as admitted
               from (select array(select h from unnest(r.hits) as h where h > cast(:now as bigint) - :window order by h) as recent) s) t
       )
       returning key, least(points, cardinality(hits)) as admitted, cardinality(hits) as held, hits[1] as oldest
     ),
     counted as (
       update api_keys k set request_count = k.request_count + c.n, last_used_at = greatest(k.last_used_at, now())
       from keys c where k.id = c.id
     )
     select key, admitted, held, oldest from win`,
    { ids: requests.map((r) => r.keyId), now, window: RATE_WINDOW_MS, limit },
  ).options({ name: 'sdx_count_requests' });
  const minutes = new Map<string, { before: number; expire: number }>();
  for (const row of rows as { key: string; admitted: number; held: number; oldest: string | null }[]) {
    minutes.set(row.key, { before: row.held - row.admitted, expire: row.oldest === null ? now + RATE_WINDOW_MS : Number(row.oldest) + RATE_WINDOW_MS });
  }
  // The requests of a key take the next places after those already in its minute, in the batch's order.
  const seen = new Map<number, number>();
  return requests.map((request) => {
    const minute = minutes.get(`key:${request.keyId}`)!;
    const place = (seen.get(request.keyId) ?? 0) + 1;
    seen.set(request.keyId, place);
    return { points: minute.before + place, expire: minute.expire };
  });
}
