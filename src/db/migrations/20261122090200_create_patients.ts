// Why: enrolled patients, their private identifiers (never returned by read calls) and their consents, which gate data entry and data use.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('patients', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.integer('site_id').notNullable().references('sites.id');
    t.string('subject', 32).notNullable();
    t.string('sex', 16).notNullable();
    t.integer('birth_year').notNullable();
    t.date('enrolled_on').notNullable();
    t.string('status', 16).notNullable().defaultTo('enrolled');
    // Private attributes: the read calls never return them.
    t.text('email');
    t.text('pin');
    t.date('date_of_birth');
    t.string('initials', 8);
    // The hospital's identity of this patient, linked on the first confirmed FHIR import.
    t.jsonb('fhir_identity');
    // Set when the patient withdraws consent to the use of their data: from then on invisible to every read call.
    t.timestamp('data_use_withdrawn_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['study_id', 'subject']);
    t.index(['study_id', 'site_id', 'id']);
    t.index(['study_id', 'updated_at']);
  });
  await knex.raw("alter table patients add constraint patients_sex_check check (sex in ('female', 'male', 'other', 'unknown'))");
  await knex.raw("alter table patients add constraint patients_status_check check (status in ('enrolled', 'completed', 'withdrawn'))");
  await knex.schema.createTable('consents', (t) => {
    t.increments('id');
    t.integer('patient_id').notNullable().references('patients.id');
    t.date('given_on');
    t.date('withdrawn_on');
    // A withdrawal that also covers the use of the data already collected.
    t.boolean('data_use_withdrawn').notNullable().defaultTo(false);
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['patient_id']);
  });
  // Tombstones, so incremental readers learn which patients' data they must delete.
  await knex.schema.createTable('removals', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.integer('patient_id').notNullable().references('patients.id');
    t.string('reason', 32).notNullable();
    t.timestamp('removed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['study_id', 'removed_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('removals');
  await knex.schema.dropTable('consents');
  await knex.schema.dropTable('patients');
}
