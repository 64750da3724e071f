// Why: the audit trail must be tamper-evident: the database itself refuses to change or delete an audit row, and each study's rows form a hash chain that `sdx audit verify` checks.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => {
    t.string('prev_hash', 64);
    t.string('hash', 64);
  });
  await knex.raw(`
    create function audit_events_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_events is append-only: % refused', tg_op using errcode = '42501';
    end $$`);
  await knex.raw(`create trigger audit_events_append_only before update or delete on audit_events
    for each row execute function audit_events_append_only()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger audit_events_append_only on audit_events');
  await knex.raw('drop function audit_events_append_only()');
  await knex.schema.alterTable('audit_events', (t) => {
    t.dropColumn('prev_hash');
    t.dropColumn('hash');
  });
}
