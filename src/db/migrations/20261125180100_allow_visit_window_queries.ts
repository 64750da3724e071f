// Why: a visit date outside its visit's window opens an automatic query of its own origin (issue 19, point 7).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table queries drop constraint queries_origin_check');
  await knex.raw("alter table queries add constraint queries_origin_check check (origin in ('range', 'edit_check', 'visit_window', 'manual'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("update queries set origin = 'range' where origin = 'visit_window'");
  await knex.raw('alter table queries drop constraint queries_origin_check');
  await knex.raw("alter table queries add constraint queries_origin_check check (origin in ('range', 'edit_check', 'manual'))");
}
