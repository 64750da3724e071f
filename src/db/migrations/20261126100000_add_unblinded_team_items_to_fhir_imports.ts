// Why: the audit read leaves out, for a blinded key, the rows about an import that holds an item on an
// unblinded-team form (their counts and positions would tell of it). Expanding every import's items to find
// out made each audit page of a blinded key read all imports' items; the import now says it once, when made.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.boolean('unblinded_team_items').notNullable().defaultTo(false);
  });
  // Few imports hold such items: the audit read looks them up by id among these alone.
  await knex.raw('create index fhir_imports_unblinded_team_items on fhir_imports (id) where unblinded_team_items');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.dropColumn('unblinded_team_items');
  });
}
