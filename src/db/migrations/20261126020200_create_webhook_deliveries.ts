// Why: each event owed to a subscription is a row written with the event, so delivery is in order per subscription, retried, and logged (issue 22.5).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id');
    t.integer('subscription_id').notNullable().references('webhook_subscriptions.id');
    t.bigInteger('event_id').notNullable().references('webhook_events.id');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('first_failed_at', { useTz: true }).nullable();
    t.timestamp('last_attempt_at', { useTz: true }).nullable();
    t.timestamp('delivered_at', { useTz: true }).nullable();
    // The receiver's HTTP status of the last attempt, or null when it gave none (refused address, timeout, network).
    t.integer('last_status').nullable();
    t.text('last_error').nullable();
    t.unique(['subscription_id', 'event_id']);
  });
  // The worker reads a subscription's undelivered events in event order; delivered rows drop out of the index.
  await knex.raw('create index webhook_deliveries_pending on webhook_deliveries (subscription_id, event_id) where delivered_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
}
