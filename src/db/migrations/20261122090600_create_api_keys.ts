// Why: per-system API keys (only a fingerprint of the value is kept), their sites, usage counters and the log of every read.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.text('name').notNullable();
    // SHA-256 of the key value; the value itself is shown once and never stored.
    t.specificType('fingerprint', 'bytea').notNullable().unique();
    // The first characters of the value, so a person can tell keys apart in the keys table.
    t.string('hint', 24).notNullable();
    t.boolean('can_read').notNullable();
    t.boolean('can_write').notNullable();
    t.boolean('can_enrol').notNullable();
    t.integer('term_days').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.integer('created_by').notNullable().references('users.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.integer('revoked_by').references('users.id');
    t.timestamp('last_used_at', { useTz: true });
    t.bigInteger('request_count').notNullable().defaultTo(0);
    t.bigInteger('rows_read').notNullable().defaultTo(0);
    t.index(['study_id']);
  });
  await knex.raw('alter table api_keys add constraint api_keys_term_check check (term_days in (30, 90, 365))');
  await knex.schema.createTable('api_key_sites', (t) => {
    t.integer('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.integer('site_id').notNullable().references('sites.id');
    t.primary(['api_key_id', 'site_id']);
  });
  await knex.schema.createTable('read_log', (t) => {
    t.bigIncrements('id');
    t.integer('api_key_id').notNullable().references('api_keys.id');
    t.integer('study_id').notNullable().references('studies.id');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.string('operation', 48).notNullable();
    t.jsonb('filters').notNullable().defaultTo('{}');
    t.integer('rows').notNullable();
    t.index(['study_id', 'id']);
    t.index(['api_key_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('read_log');
  await knex.schema.dropTable('api_key_sites');
  await knex.schema.dropTable('api_keys');
}
