// Creates or drops a throwaway database for the CI run on a real PostgreSQL server: `create|drop <admin url> <name>`.
import pg from 'pg';

const [action, adminUrl, name] = process.argv.slice(2);
if (!['create', 'drop'].includes(action) || !adminUrl || !/^[a-z0-9_]+$/.test(name ?? '')) {
  console.error('usage: node scripts/testDatabase.mjs create|drop <admin url> <database name>');
  process.exit(2);
}
const client = new pg.Client({ connectionString: adminUrl });
await client.connect();
await client.query(action === 'create' ? `create database ${name}` : `drop database if exists ${name} with (force)`);
await client.end();
console.log(`${action === 'create' ? 'created' : 'dropped'} database ${name}`);
