// Why: events written before `unblinded_only` was stored get the flag their writer gave them (studyEvent): the study is blinded
// and the event names a form of the unblinded team. A study's blinding and its forms' teams are never changed after it is loaded,
// so the flag derived now is the one the event was written with, and a waiting event about such a form stays kept from blinded creators.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update webhook_events e set unblinded_only = true
    from studies s join forms f on f.study_id = s.id
    where s.id = e.study_id and s.blinded and f.team = 'unblinded' and f.code = e.data->>'form'`);
}

export async function down(): Promise<void> {
  // Nothing to undo: the previous migration's down drops the column.
}
