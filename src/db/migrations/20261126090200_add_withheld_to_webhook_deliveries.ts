// Why: a waiting delivery its subscription may no longer receive when it is sent (its creator's role changed) is withheld: never
// sent, out of the subscription's queue so the events after it go on, and shown with its reason in the delivery log.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.timestamp('withheld_at', { useTz: true }).nullable();
    t.string('withheld_reason', 32).nullable();
  });
  // A withheld delivery has its reason, and was never delivered.
  await knex.raw(`alter table webhook_deliveries add constraint webhook_deliveries_withheld_check check (
    (withheld_at is null) = (withheld_reason is null) and withheld_reason in ('creator_not_manager', 'site_not_covered', 'creator_blinded')
    and (withheld_at is null or delivered_at is null))`);
  // The worker's queue is what is neither delivered nor withheld.
  await knex.raw('drop index webhook_deliveries_pending');
  await knex.raw('create index webhook_deliveries_pending on webhook_deliveries (subscription_id, event_id) where delivered_at is null and withheld_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index webhook_deliveries_pending');
  await knex.raw('create index webhook_deliveries_pending on webhook_deliveries (subscription_id, event_id) where delivered_at is null');
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('withheld_reason');
    t.dropColumn('withheld_at');
  });
}
