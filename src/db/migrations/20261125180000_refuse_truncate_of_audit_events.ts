// Why: TRUNCATE fires no row trigger, so the append-only audit trail could still be emptied in one statement; refuse it too, for every role.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create trigger audit_events_no_truncate before truncate on audit_events
    for each statement execute function audit_events_append_only()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger audit_events_no_truncate on audit_events');
}
