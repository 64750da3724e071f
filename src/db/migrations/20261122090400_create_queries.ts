// Why: data queries (automatic ones from ranges and edit checks, and manual ones) that the site team answers.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('queries', (t) => {
    t.bigIncrements('id');
    t.integer('study_id').notNullable().references('studies.id');
    t.bigInteger('record_id').notNullable().references('records.id');
    t.integer('patient_id').notNullable().references('patients.id');
    t.integer('site_id').notNullable().references('sites.id');
    t.string('field_code', 32).notNullable();
    t.string('origin', 16).notNullable();
    // The edit check that opened it, so a corrected value closes exactly its own queries.
    t.string('check_code', 32);
    t.string('status', 16).notNullable().defaultTo('open');
    t.text('message').notNullable();
    t.text('opened_by').notNullable();
    t.timestamp('opened_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('closed_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['study_id', 'id']);
    t.index(['study_id', 'site_id', 'id']);
    t.index(['study_id', 'updated_at', 'id']);
    t.index(['record_id', 'status']);
  });
  await knex.raw("alter table queries add constraint queries_origin_check check (origin in ('range', 'edit_check', 'manual'))");
  await knex.raw("alter table queries add constraint queries_status_check check (status in ('open', 'answered', 'closed'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('queries');
}
