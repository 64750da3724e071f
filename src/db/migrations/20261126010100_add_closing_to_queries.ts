// Why: the queries read says who closed a query and why (issue 22.2); until now only the audit trail knew.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('queries', (t) => {
    t.string('closed_by_type', 16);
    t.text('closed_by');
    t.text('close_reason');
  });
  await knex.raw("alter table queries add constraint queries_closed_by_type_check check (closed_by_type in ('user', 'api_key', 'operator', 'system'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('queries', (t) => {
    t.dropColumn('close_reason');
    t.dropColumn('closed_by');
    t.dropColumn('closed_by_type');
  });
}
