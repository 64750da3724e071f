// Why: a FHIR import and its items wait on the patient's card until the site team confirms or rejects them.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('fhir_imports', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.integer('patient_id').notNullable().references('patients.id');
    // Numbered per patient: the number is part of the review page's address.
    t.integer('number').notNullable();
    t.string('mode', 8).notNullable();
    t.string('status', 16).notNullable();
    t.integer('api_key_id').references('api_keys.id');
    t.jsonb('counts').notNullable();
    // The identity the file carried (e.g. the hospital's identifier), linked to the patient on confirmation.
    t.jsonb('fhir_identity');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('decided_at', { useTz: true });
    t.integer('decided_by').references('users.id');
    t.unique(['patient_id', 'number']);
  });
  await knex.raw("alter table fhir_imports add constraint fhir_imports_status_check check (status in ('proposed', 'saved', 'confirmed', 'rejected'))");
  await createImportItemsTable(knex);
}

/**
 * The items table as this migration made it; 20261125090000 moved the items into their import's row, and
 * its `down` makes this table again.
 */
export async function createImportItemsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('fhir_import_items', (t) => {
    t.bigIncrements('id');
    t.integer('import_id').notNullable().references('fhir_imports.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('resource').notNullable();
    t.jsonb('code').notNullable();
    t.string('form_code', 32);
    t.string('field_code', 32);
    t.integer('row');
    t.string('visit_code', 32);
    t.integer('instance');
    t.text('value');
    t.string('unit', 64);
    t.jsonb('original').notNullable();
    t.text('effective');
    t.text('saved_value');
    t.string('state', 16).notNullable();
    t.string('reason', 32);
    t.string('chosen_by', 16);
    t.jsonb('candidates').notNullable().defaultTo('[]');
    t.unique(['import_id', 'position']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('fhir_import_items');
  await knex.schema.dropTable('fhir_imports');
}
