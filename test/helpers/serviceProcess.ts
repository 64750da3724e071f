import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { DATABASE_VARIABLES, databaseEnv } from './testDatabase.js';

/** A service process of its own: `node --import tsx src/server.ts` as a child, on the suite's database. */
export interface ServiceProcess {
  baseUrl: string;
  /** The child's process id: its database connections are named `sdx-<pid>-…` (src/db/knex.ts). */
  pid: number;
  /** Settles when the child has exited, with its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything the child printed so far, stdout and stderr. */
  output(): string;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** A port nothing listens on now, on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts the real server in a second OS process with the suite's database settings (`testEnv`: the
 * TEST_DATABASE_URL database, or the same embedded server, which the child joins), so the two
 * processes share nothing but PostgreSQL; or with the database `env` chooses.
 */
export async function startServiceProcess(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  // The port was free when probed, but on a shared machine another process can take it before the child
  // listens (EADDRINUSE): then the child starts again on another, unless the caller chose the port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPort(env, await freePort());
    } catch (error) {
      if (env.PORT !== undefined || attempt === 3 || !(error instanceof Error && /EADDRINUSE/.test(error.message))) throw error;
    }
  }
}

async function startOnPort(env: NodeJS.ProcessEnv, port: number): Promise<ServiceProcess> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', PORT: String(port), BASE_URL: `http://127.0.0.1:${port}` };
  // The child must use exactly the suite's database: nothing inherited may point it elsewhere.
  for (const name of DATABASE_VARIABLES) delete childEnv[name];
  Object.assign(childEnv, databaseEnv(env), env);
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('sdx listening')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('exit', (code) => reject(new Error(`the second service process exited (${code}) before listening:\n${output}`)));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    exited,
    output: () => output,
    kill: (signal) => { child.kill(signal); },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
