// Why: a patient whose latest consent is withdrawn left the study early, and recordConsent now says so in the patient's
// status (`withdrawn`); patients who withdrew before it did are given that status here, their rows stamped as changed so
// that the next incremental load of the patients read brings it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update patients p set status = 'withdrawn', updated_at = now()
    where p.status = 'enrolled' and (
      select c.withdrawn_on is not null from consents c where c.patient_id = p.id order by c.id desc limit 1)`);
}

export async function down(): Promise<void> {
  // Nothing to undo: a withdrawn patient's status is what recordConsent now writes.
}
