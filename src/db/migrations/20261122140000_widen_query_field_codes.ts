// Why: an automatic query on a table cell names it `<table>[<row>].<column>` (up to 70 characters), in the query and in its audit rows.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Widening a varchar rewrites no row, so the append-only trigger on audit_events is not involved.
  await knex.raw('alter table queries alter column field_code type varchar(80)');
  await knex.raw('alter table audit_events alter column field_code type varchar(80)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table audit_events alter column field_code type varchar(32)');
  await knex.raw('alter table queries alter column field_code type varchar(32)');
}
