// Why: a key stopped by its maker's loss of the manager role or of the export right stays stopped when the role or right comes back ("States and transitions: API key": stopped has no way out), so the stop is kept, not derived again.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.timestamp('stopped_at', { useTz: true });
    t.text('stopped_reason');
  });
  await knex.raw(`alter table api_keys add constraint api_keys_stopped_check check (
    (stopped_at is null and stopped_reason is null) or (stopped_at is not null and stopped_reason in ('maker_not_manager', 'maker_lost_export')))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('stopped_reason');
    t.dropColumn('stopped_at');
  });
}
