// Why: an `Idempotency-Key` makes a retried write return its first answer instead of writing twice (issue 10); the key's claim and that answer live here, in the write's own transaction.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.bigIncrements('id');
    t.integer('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    // The operationId: a value used on one call is free on another.
    t.string('operation', 64).notNullable();
    t.string('idempotency_key', 255).notNullable();
    // SHA-256 (hex) of the request as the service understood it: another request under the same key is refused.
    t.string('fingerprint', 64).notNullable();
    // The first answer, as sent; `json` rather than `jsonb` keeps its members in their order, so a replay is the same text.
    t.json('result');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // The claim: a concurrent request with the same key waits on this index until the first one ends.
    t.unique(['api_key_id', 'operation', 'idempotency_key']);
    // The purge of expired keys reads them oldest first.
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
