// Why: a study and its design (sites, visits, forms, fields, edit checks, FHIR mapping) are the frame every other row hangs on.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('studies', (t) => {
    t.increments('id');
    t.string('code', 32).notNullable().unique();
    t.text('name').notNullable();
    t.boolean('blinded').notNullable().defaultTo(false);
    t.boolean('consent_required').notNullable().defaultTo(false);
    t.boolean('enrolment_open').notNullable().defaultTo(true);
    t.boolean('locked').notNullable().defaultTo(false);
    t.boolean('api_enabled').notNullable().defaultTo(true);
    t.text('subject_format').notNullable();
    // The parsed design as loaded, kept whole so the design call and its ETag come from one place.
    t.jsonb('design').notNullable();
    t.string('design_hash', 64).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('sites', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.string('number', 8).notNullable();
    t.text('name').notNullable();
    // Last patient number issued at the site; incremented in the enrolling transaction.
    t.integer('last_seq').notNullable().defaultTo(0);
    t.unique(['study_id', 'number']);
  });
  await knex.schema.createTable('forms', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.string('code', 32).notNullable();
    t.text('name').notNullable();
    t.string('team', 16).notNullable().defaultTo('all');
    t.integer('position').notNullable();
    t.unique(['study_id', 'code']);
  });
  await knex.raw("alter table forms add constraint forms_team_check check (team in ('all', 'unblinded'))");
  await knex.schema.createTable('fields', (t) => {
    t.increments('id');
    t.integer('form_id').notNullable().references('forms.id').onDelete('CASCADE');
    t.string('code', 32).notNullable();
    t.text('label').notNullable();
    t.string('type', 16).notNullable();
    t.string('unit', 64);
    t.decimal('min', 20, 6);
    t.decimal('max', 20, 6);
    t.integer('decimals');
    t.jsonb('options');
    t.boolean('required').notNullable().defaultTo(false);
    // Columns of a table field, each shaped like a field.
    t.jsonb('columns');
    t.integer('position').notNullable();
    t.unique(['form_id', 'code']);
  });
  await knex.schema.createTable('visits', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.string('code', 32).notNullable();
    t.text('name').notNullable();
    t.integer('position').notNullable();
    t.boolean('repeating').notNullable().defaultTo(false);
    t.integer('planned_day');
    t.integer('window_before').notNullable().defaultTo(0);
    t.integer('window_after').notNullable().defaultTo(0);
    t.unique(['study_id', 'code']);
  });
  await knex.schema.createTable('visit_forms', (t) => {
    t.integer('visit_id').notNullable().references('visits.id').onDelete('CASCADE');
    t.integer('form_id').notNullable().references('forms.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.primary(['visit_id', 'form_id']);
  });
  await knex.schema.createTable('edit_checks', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.integer('form_id').notNullable().references('forms.id').onDelete('CASCADE');
    t.string('code', 32).notNullable();
    t.string('field_code', 32).notNullable();
    t.jsonb('rule').notNullable();
    t.text('message').notNullable();
    t.text('message_ru');
    t.string('action', 16).notNullable().defaultTo('query');
    t.unique(['study_id', 'code']);
  });
  await knex.schema.createTable('fhir_mappings', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.string('kind', 16).notNullable();
    t.integer('position').notNullable();
    t.jsonb('rule').notNullable();
  });
  await knex.raw("alter table fhir_mappings add constraint fhir_mappings_kind_check check (kind in ('observation', 'condition', 'medication'))");
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['fhir_mappings', 'edit_checks', 'visit_forms', 'visits', 'fields', 'forms', 'sites', 'studies']) {
    await knex.schema.dropTable(table);
  }
}
