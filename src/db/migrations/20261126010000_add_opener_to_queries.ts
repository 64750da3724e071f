// Why: a query raised through the API may be closed by the key that raised it (issue 22.2), so the opener is kept as an actor, not only as a name.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('queries', (t) => {
    // Null for automatic queries, which the service opens itself, and for manual ones opened before this column.
    t.string('opened_by_type', 16);
    t.integer('opened_by_id');
  });
  await knex.raw("alter table queries add constraint queries_opened_by_type_check check (opened_by_type in ('user', 'api_key', 'operator'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('queries', (t) => {
    t.dropColumn('opened_by_id');
    t.dropColumn('opened_by_type');
  });
}
