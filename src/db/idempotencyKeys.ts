import type { Knex } from 'knex';
import type { IdempotencyKeyStore, IdempotencyScope } from '../domain/stores.js';

const TABLE = 'idempotency_keys';

/**
 * Expired keys removed with each kept answer. Every kept answer adds one row and may remove up to
 * this many, so the table holds about a day of keys without a scheduled job.
 */
const PURGE_BATCH = 100;

const scopeOf = (scope: IdempotencyScope) => ({ api_key_id: scope.apiKeyId, operation: scope.operation, idempotency_key: scope.key });

/**
 * Keys and first answers of write requests, on the database clock so that every service process
 * agrees on their age. The claim is one upsert: the unique index makes a concurrent claim of the same
 * key wait until the first transaction ends, and a claim past its lifetime is taken over in place.
 */
export function idempotencyKeyStore(db: Knex): IdempotencyKeyStore {
  return {
    async claim(scope, fingerprint, lifetimeHours) {
      const { rows } = await db.raw<{ rows: { id: number }[] }>(
        `insert into ${TABLE} as k (api_key_id, operation, idempotency_key, fingerprint)
         values (:api_key_id, :operation, :idempotency_key, :fingerprint)
         on conflict (api_key_id, operation, idempotency_key) do update
           set fingerprint = excluded.fingerprint, result = null, created_at = now()
           where k.created_at <= now() - make_interval(hours => :lifetimeHours)
         returning id`,
        { ...scopeOf(scope), fingerprint, lifetimeHours },
      );
      if (rows.length > 0) return undefined;
      // The upsert locked the live claim it left alone, so it is still there (and committed) to be read.
      const held = await db(TABLE).where(scopeOf(scope)).first<{ fingerprint: string; result: unknown }>('fingerprint', 'result');
      return { fingerprint: held.fingerprint, result: held.result };
    },
    async keepResult(scope, result, lifetimeHours) {
      // SKIP LOCKED: a key that another transaction is taking over or purging is left to it, never waited for.
      await db.raw(
        `with purged as (
           delete from ${TABLE} where id in (
             select id from ${TABLE} where created_at <= now() - make_interval(hours => :lifetimeHours)
             order by created_at limit :batch for update skip locked))
         update ${TABLE} set result = cast(:result as json)
         where api_key_id = :api_key_id and operation = :operation and idempotency_key = :idempotency_key`,
        { ...scopeOf(scope), result: JSON.stringify(result), lifetimeHours, batch: PURGE_BATCH },
      );
    },
  };
}
