// Why: staff sign in to the portal; a session lives in PostgreSQL (so every service process shares it and sign-out ends it at once), keyed by a hash of its cookie value.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sessions', (t) => {
    // SHA-256 of the 256-bit random cookie value: a copy of this table does not let anyone in.
    t.specificType('id_hash', 'bytea').primary();
    // Null until sign-in: the sign-in form itself needs a session to carry its CSRF token.
    t.integer('user_id').references('users.id').onDelete('CASCADE');
    // The synchronizer token every form of this session must send back.
    t.string('csrf_token', 64).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Idle and absolute limits are folded into one deadline, moved forward on each request up to the absolute one.
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('absolute_expires_at', { useTz: true }).notNullable();
    t.index(['user_id']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sessions');
}
