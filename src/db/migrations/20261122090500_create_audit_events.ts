// Why: the append-only audit trail every change enters, whoever made it and whichever way it arrived.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // user, api_key or system: who acted, with the id in its own table.
    t.string('actor_type', 16).notNullable();
    t.integer('actor_id');
    // As shown in the trail, e.g. "LIMS (API)".
    t.text('author').notNullable();
    t.text('reason').notNullable();
    t.string('action', 48).notNullable();
    t.integer('patient_id').references('patients.id');
    t.bigInteger('record_id').references('records.id');
    t.string('field_code', 32);
    t.text('old_value');
    t.text('new_value');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.index(['study_id', 'id']);
    t.index(['patient_id', 'id']);
    t.index(['record_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('audit_events');
}
