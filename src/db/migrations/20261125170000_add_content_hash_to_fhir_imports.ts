// Why: the same FHIR file sent again while its import still waits for review returns that import instead of a second one (issue 19, point 6).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // SHA-256 (hex) of the file's resources as understood; null for imports made before it was kept.
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.string('content_hash', 64);
  });
  // At most one waiting import per patient, mode and content, whichever service process received the file.
  await knex.raw(`create unique index fhir_imports_one_proposed_per_content on fhir_imports (patient_id, mode, content_hash)
    where status = 'proposed' and content_hash is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index fhir_imports_one_proposed_per_content');
  await knex.schema.alterTable('fhir_imports', (t) => {
    t.dropColumn('content_hash');
  });
}
