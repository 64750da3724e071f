// Why: an import's items (hundreds of KB of JSON for the largest Synthea file) are compressed when the import's
// row is written, and lz4 does it faster than PostgreSQL's default method, pglz, in less than half the space
// (bench/README.md, "Import items compressed with lz4"). lz4 is used only where the server was built with it (the
// Debian and most packaged servers are; the embedded server's build is not, and keeps pglz): a server without it
// refuses the setting. A dump of such a database restores onto a server without lz4 with pg_dump's
// --no-toast-compression.
import type { Knex } from 'knex';

async function serverHasLz4(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { lz4: boolean }[] }>(`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`);
  return rows[0]?.lz4 === true;
}

export async function up(knex: Knex): Promise<void> {
  if (await serverHasLz4(knex)) await knex.raw('alter table fhir_imports alter column items set compression lz4');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table fhir_imports alter column items set compression default');
}
