// Why: a patient's e-mail, PIN, date of birth and initials were never written or read by anything (issue 20.5):
// columns kept "for the site team" that no part of the service fills are data the study does not need. A patient
// carries its sex, birth year and the hospital identity of its first confirmed FHIR import.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('patients', (t) => {
    t.dropColumns('email', 'pin', 'date_of_birth', 'initials');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('patients', (t) => {
    t.text('email');
    t.text('pin');
    t.date('date_of_birth');
    t.string('initials', 8);
  });
}
