// Why: a record is one filled form of one visit occurrence of one patient; the read calls page over it by id and by update time.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('records', (t) => {
    t.bigIncrements('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.integer('patient_id').notNullable().references('patients.id');
    // Copied from the patient so site-scoped reads filter on one indexed table.
    t.integer('site_id').notNullable().references('sites.id');
    t.integer('visit_id').notNullable().references('visits.id');
    t.integer('form_id').notNullable().references('forms.id');
    t.integer('instance').notNullable().defaultTo(1);
    t.string('status', 16).notNullable();
    t.string('source', 16).notNullable();
    t.jsonb('values').notNullable().defaultTo('{}');
    t.jsonb('not_done').notNullable().defaultTo('{}');
    t.jsonb('tables').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['patient_id', 'visit_id', 'form_id', 'instance']);
    t.index(['study_id', 'id']);
    t.index(['study_id', 'site_id', 'id']);
    t.index(['study_id', 'updated_at', 'id']);
  });
  await knex.raw("alter table records add constraint records_status_check check (status in ('complete', 'draft'))");
  await knex.raw("alter table records add constraint records_source_check check (source in ('api', 'fhir', 'portal'))");
  await knex.raw('alter table records add constraint records_instance_check check (instance >= 1)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('records');
}
