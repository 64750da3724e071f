// Why: the transactional outbox (issue 22.5): an event is written in the transaction of the change it reports, so a crash loses none and a rollback sends none.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_events', (t) => {
    t.bigIncrements('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.string('type', 32).notNullable();
    // Ids and codes only (spec: webhooks), never a value: the body's `data`.
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_events');
}
