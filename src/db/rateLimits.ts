import type { Knex } from 'knex';
import { RATE_WINDOW_MS, type RateWindow } from '../domain/apiKeys/rateWindow.js';

/**
 * Counting requests of working keys: in each key's rate window (src/domain/apiKeys/rateWindow.ts), kept
 * in PostgreSQL so that every service process on the same database shares one count, and in the key's
 * request counter and time of last use (the keys table). The table keeps rate-limiter-flexible's layout
 * (`key:<id>`, points, expiry in epoch ms) and its upsert.
 */
export const TABLE = 'rate_limits';

/** One request to count: its key, and the instant it came. */
export interface CountRequest {
  keyId: number;
  at: Date;
}

/**
 * Counts a batch of requests (src/db/keyLookup.ts gathers them) in one statement and gives each its
 * window as counted with it. Several requests of one key are counted as if they came one after the
 * other, in the batch's order: the window grows by their number and each request gets its own place in
 * it. Windows are written in key order, and keys' counters after all windows, so two batches sharing
 * keys queue rather than deadlock.
 *
 * Its commit does not wait for the WAL to reach the disk (`synchronous_commit` off for this transaction
 * alone, set with the counts it concerns): the service waited on that flush for a quarter of its time
 * under load, and a database crash can then lose only the counts of its last fraction of a second (three
 * rounds of the WAL writer, 600 ms by default), which a rate window can spare (SECURITY.md, API4).
 * Clinical writes and the audit trail keep waiting for theirs. So it runs on its own, never inside
 * another transaction, whose commit the setting would reach.
 */
export async function countRequests(db: Knex, requests: readonly CountRequest[]): Promise<RateWindow[]> {
  const now = Date.now();
  const { rows } = await db.raw(
    `with keys as materialized (
       select id, count(*) as n, set_config('synchronous_commit', 'off', true) as commit_mode
       from unnest(cast(:ids as int[])) as r(id) group by id order by id
     ),
     win as (
       insert into ${TABLE} as r (key, points, expire) select 'key:' || id, n, :expire from keys order by id
       on conflict (key) do update set
         points = case when r.expire <= :now then excluded.points else r.points + excluded.points end,
         expire = case when r.expire <= :now then excluded.expire else r.expire end
       returning key, points, expire
     ),
     counted as (
       update api_keys k set request_count = k.request_count + c.n, last_used_at = greatest(k.last_used_at, now())
       from keys c where k.id = c.id
     )
     select key, points, expire from win`,
    { ids: requests.map((r) => r.keyId), now, expire: now + RATE_WINDOW_MS },
  ).options({ name: 'sdx_count_requests' });
  const windows = new Map<string, { points: number; expire: number }>();
  for (const row of rows as { key: string; points: number; expire: string }[]) windows.set(row.key, { points: row.points, expire: Number(row.expire) });
  const inBatch = new Map<number, number>();
  for (const request of requests) inBatch.set(request.keyId, (inBatch.get(request.keyId) ?? 0) + 1);
  // The requests of a key take its window's last places, in the batch's order.
  const seen = new Map<number, number>();
  return requests.map((request) => {
    const window = windows.get(`key:${request.keyId}`)!;
    const place = (seen.get(request.keyId) ?? 0) + 1;
    seen.set(request.keyId, place);
    return { points: window.points - inBatch.get(request.keyId)! + place, expire: window.expire };
  });
}
