// Why: a waiting delivery is checked again when it is sent (issue 22.5), by the rule that chose its receivers, which needs to know whether the event is about a form of the unblinded team.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_events', (t) => {
    t.boolean('unblinded_only').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_events', (t) => {
    t.dropColumn('unblinded_only');
  });
}
