import type { Knex } from 'knex';
import type { CountReceipt } from '../domain/apiKeys/admission.js';
import { RATE_WINDOW_MS, type RateWindow } from '../domain/apiKeys/rateWindow.js';

/**
 * Counting requests: in each key's sliding minute (src/domain/apiKeys/rateWindow.ts), kept in PostgreSQL so
 * that every service process on the same database shares one log, and in the key's request counter and
 * time of last use (the keys table). `hits` holds the instants (epoch ms) of the requests let through in
 * the last minute; `points` the number the last statement let through, `expire` when the newest leaves the
 * minute.
 *
 * A request is counted in the statement that finds its key (findKeysForRequests), whatever the key's state:
 * each round trip costs a request more than the SQL it runs (bench/README.md), and whether a key works is
 * decided only by the domain, once the key is found. The rare request the domain then refuses with 401 has
 * its count taken back (takeBackCounts), so that it leaves no count, no time of use and no place in the minute.
 *
 * Locks: every statement here locks the keys' rows first, in key order, and only then their minutes'
 * rows, so whoever writes a minute holds its key: statements of several processes queue on the keys and
 * never deadlock.
 */
const TABLE = 'rate_limits';

/**
 * Common table expressions that count the requests of `keys` (an expression with columns `id`, the key,
 * and `n`, its number of requests, one row a key), at `:now` (epoch ms) with `:limit` a minute. Several
 * requests of one key are counted as if they came one after the other, in the batch's order: each is let
 * through while fewer than `limit` requests were let through in the last 60 seconds, so no 60 seconds ever
 * hold more than `limit` (no double burst across a window's edge, issue 21.8). A request refused with 429
 * still counts in the key's request counter, not in its minute. `locked` gives each key's time of last use
 * as it was (`used_before`, read under the key's lock, so exactly what the count replaced), `win` each
 * minute as counted (`key`, `admitted`, `held`, `oldest`), `counted` each key's new time of last use
 * (`id`, `used_at`).
 *
 * Its commit does not wait for the WAL to reach the disk (`synchronous_commit` off for this transaction
 * alone): the service waited on that flush for a quarter of its time under load, and a database crash can
 * then lose only the counts of its last fraction of a second (three rounds of the WAL writer, 600 ms by
 * default), which a rate limit can spare (SECURITY.md, API4). Clinical writes and the audit trail keep
 * waiting for theirs. So it runs on its own, never inside another transaction, whose commit the setting
 * would reach.
 */
export function countSql(keys: string): string {
  // A new key's row proposes as `points` the number of its requests in the batch, which the update reads
  // (as excluded.points) and replaces with the number let through; so that number is the least of points and hits.
  // `offset 0` keeps the minute's recent instants one subquery: PostgreSQL otherwise inlines it where each
  // of its three uses stands and unnests and sorts the key's log three times (bench/README.md).
  return `locked as materialized (
       select k.id, c.n, k.last_used_at::text as used_before, set_config('synchronous_commit', 'off', true) as commit_mode
       from api_keys k join ${keys} c on c.id = k.id order by k.id for update of k
     ),
     win as (
       insert into ${TABLE} as r (key, points, expire, hits)
       select 'key:' || id, n, cast(:now as bigint) + :window, array_fill(cast(:now as bigint), array[least(n, :limit)]) from locked order by id
       on conflict (key) do update set (points, hits, expire) = (
         select t.admitted, t.recent || array_fill(cast(:now as bigint), array[t.admitted]), excluded.expire
         from (select s.recent, greatest(0, least(excluded.points, :limit - cardinality(s.recent))) as admitted
               from (select array(select h from unnest(r.hits) as h where h > cast(:now as bigint) - :window order by h) as recent offset 0) s) t
       )
       returning key, least(points, cardinality(hits)) as admitted, cardinality(hits) as held, hits[1] as oldest
     ),
     counted as (
       update api_keys k set request_count = k.request_count + c.n, last_used_at = greatest(k.last_used_at, now())
       from locked c where k.id = c.id
       returning k.id, k.last_used_at::text as used_at
     )`;
}

/** A key's minute as a counting statement returned it (`win` of countSql). */
interface CountedMinute {
  key: string;
  admitted: number;
  held: number;
  oldest: string | null;
}

/**
 * A key's counted requests as the finding statement returned them, with its time of last use before and
 * after, as PostgreSQL's text: a Date would lose the microseconds that tell one count's time from another's.
 */
export interface CountedKey {
  id: number;
  minute: CountedMinute;
  usedBefore: string | null;
  usedAt: string;
}

/**
 * Each request's place in its key's minute and what takes its count back, for the requests of a batch by
 * their keys (undefined: no key found, nothing counted). The requests of a key take the next places after
 * those already in its minute, in the batch's order; only the first `admitted` took one.
 */
export function countsOfRequests(keys: readonly (CountedKey | undefined)[], now: number): ({ window: RateWindow; receipt: CountReceipt } | undefined)[] {
  const seen = new Map<number, number>();
  return keys.map((key) => {
    if (!key) return undefined;
    const place = (seen.get(key.id) ?? 0) + 1;
    seen.set(key.id, place);
    const { minute } = key;
    const window = { points: minute.held - minute.admitted + place, expire: minute.oldest === null ? now + RATE_WINDOW_MS : Number(minute.oldest) + RATE_WINDOW_MS };
    return { window, receipt: { keyId: key.id, at: now, placed: place <= minute.admitted, usedBefore: key.usedBefore, usedAt: key.usedAt } };
  });
}

/**
 * Takes back the counts of requests whose key the domain refused (src/db/keyLookup.ts gathers them): one
 * off the key's request counter each, its place in the minute if it took one (a row left with no place is
 * deleted, as if never made), and the key's time of last use back to what it was, unless a later count
 * moved it since. The keys are locked first, by a statement of their own, so the second statement's
 * snapshot holds every count committed for them and no count can come between.
 *
 * The time of last use follows back through every count taken back here: a key's value set by a count
 * this batch takes back returns to what that count found, and so on. Two processes taking back counts of
 * one key in the order they counted leave the time of the first refused request (the second finds the
 * value the first set); the counter and the minute stay exact.
 */
export async function takeBackCounts(db: Knex, receipts: readonly CountReceipt[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.raw(
      `select k.id, set_config('synchronous_commit', 'off', true) from api_keys k where k.id = any(cast(:ids as int[])) order by k.id for update`,
      { ids: receipts.map((r) => r.keyId) },
    );
    await trx.raw(
      `with recursive taken as (
         select * from unnest(cast(:ids as int[]), cast(:ats as bigint[]), cast(:placed as int[]), cast(:befores as timestamptz[]), cast(:afters as timestamptz[]))
           as t(id, at, placed, used_before, used_at)
       ),
       steps as (select distinct id, used_before, used_at from taken where used_before is distinct from used_at),
       used(id, at, depth) as (
         select k.id, k.last_used_at, 0 from api_keys k where k.id in (select id from taken)
         union all
         select u.id, s.used_before, u.depth + 1 from used u join steps s on s.id = u.id and s.used_at = u.at
       ),
       restored as (select distinct on (id) id, at from used order by id, depth desc),
       uncounted as (
         update api_keys k set request_count = k.request_count - c.n, last_used_at = r.at
         from (select id, count(*)::int as n from taken group by id) c join restored r on r.id = c.id where k.id = c.id
       ),
       places as (select 'key:' || id as key, at, sum(placed)::int as n from taken group by id, at having sum(placed) > 0),
       kept as (
         select r.key, array(
           select x.h from (select h, row_number() over (partition by h) as nth from unnest(r.hits) as h) x
           where x.nth > coalesce((select p.n from places p where p.key = r.key and p.at = x.h), 0) order by x.h) as hits
         from ${TABLE} r where r.key in (select key from places)
       ),
       freed as (update ${TABLE} r set hits = kept.hits from kept where r.key = kept.key and cardinality(kept.hits) > 0)
       delete from ${TABLE} r using kept where r.key = kept.key and cardinality(kept.hits) = 0`,
      {
        ids: receipts.map((r) => r.keyId), ats: receipts.map((r) => r.at), placed: receipts.map((r) => (r.placed ? 1 : 0)),
        befores: receipts.map((r) => r.usedBefore), afters: receipts.map((r) => r.usedAt),
      },
    );
  });
}
