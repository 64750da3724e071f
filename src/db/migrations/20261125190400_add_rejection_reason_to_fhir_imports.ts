// Why: the read calls give a rejected import's reason (issue 22.1), which until now was kept only in the audit trail's sentence.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.text('rejection_reason');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.dropColumn('rejection_reason');
  });
}
