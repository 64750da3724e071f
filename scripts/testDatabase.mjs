// Creates or drops a throwaway database for the CI run on a real PostgreSQL server: `create|drop <admin url> <name>`.
// The suite makes the database's owner and runtime roles itself (test/helpers/testDatabase.ts, src/db/roles.ts);
// dropping the database drops them too, so that no role of a finished run stays on the shared server.
import pg from 'pg';

const [action, adminUrl, name] = process.argv.slice(2);
// Short enough that `<name>_runtime` stays a whole role name (src/db/roles.ts only hashes longer ones).
if (!['create', 'drop'].includes(action) || !adminUrl || !/^[a-z0-9_]{1,55}$/.test(name ?? '')) {
  console.error('usage: node scripts/testDatabase.mjs create|drop <admin url> <database name>');
  process.exit(2);
}
const client = new pg.Client({ connectionString: adminUrl });
await client.connect();
if (action === 'create') {
  await client.query(`create database ${name}`);
} else {
  await client.query(`drop database if exists ${name} with (force)`);
  await client.query(`drop role if exists ${name}_runtime, ${name}_owner`);
}
await client.end();
console.log(`${action === 'create' ? 'created' : 'dropped'} database ${name}`);
