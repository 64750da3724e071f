// Why: a study manager subscribes a receiver's address to some of the study's events (issue 22.5); the secret signs every delivery to it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_subscriptions', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.text('url').notNullable();
    t.specificType('event_types', 'text[]').notNullable();
    // The signing secret (`whsec_…`): the service signs with it, so it is kept, unlike a key's fingerprint.
    t.text('secret').notNullable();
    // Whether events about unblinded-team forms go to it: its maker was unblinded when making it.
    t.boolean('unblinded').notNullable();
    t.string('state', 16).notNullable().defaultTo('active');
    // The person who subscribed it, or null for the operator's command line.
    t.integer('created_by').nullable().references('users.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('state_changed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['study_id']);
  });
  await knex.raw(`alter table webhook_subscriptions add constraint webhook_subscriptions_state check (state in ('active', 'failing', 'removed'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_subscriptions');
}
