/**
 * The service under test, run as in production: the compiled JavaScript (`make build` → dist/) started
 * with `node <SERVICE_NODE_FLAGS> dist/src/server.js`, no TypeScript loader, no NODE_ENV=test and no response
 * validation. Each scenario starts its own processes, so one scenario's peak memory or warm caches
 * never show in another's numbers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { SERVICE_NODE_FLAGS } from '../../src/serviceNodeFlags.js';

export interface RunningProcess {
  name: string;
  pid: number;
  url: string;
  /** The process's peak resident memory so far (VmHWM in /proc/<pid>/status), in MB. */
  peakMemoryMb(): number;
  /** Marks the end of start-up and warm-up: a CPU profile summary counts only what comes after. */
  markMeasuring(): void;
  /** When measuring began (CLOCK_MONOTONIC µs), once marked. */
  measuringFrom?: number;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  name: string;
  port: number;
  databaseUrl: string;
  /** Folder of the compiled service (`dist` unless BENCH_DIST says otherwise). */
  dist: string;
  /** When set, the process runs under `node --cpu-prof` and writes `<name>.cpuprofile` there on exit. */
  profileDir?: string;
}

/** The environment of the service: the harness's own, less anything that turns test-only checks on. */
function serviceEnv(options: { port: number; databaseUrl: string }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: options.databaseUrl, PORT: String(options.port), BASE_URL: `http://127.0.0.1:${options.port}` };
  delete env.NODE_ENV;
  delete env.VALIDATE_RESPONSES;
  delete env.NODE_OPTIONS; // a TypeScript loader inherited from the harness (tsx) must not reach the service
  delete env.RATE_LIMIT_PER_MINUTE; // the production limit, 600 a minute
  // Checked with the service's own config reader: response validation is for tests, never measured.
  if (loadConfig(env).validateResponses) throw new Error('the service would validate responses: bench runs must not');
  return env;
}

/** CPU time a process has used so far (user + system, /proc/<pid>/stat), in ms; 0 once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** sysconf(_SC_CLK_TCK): 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

function peakMemoryMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Starts a process and waits until it prints `ready` on stdout; stderr is kept for the error message. */
export async function startProcess(name: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, url: string): Promise<RunningProcess> {
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s:\n${stderr}`)), 60_000);
    const onStdout = (chunk: Buffer) => {
      stdout += chunk.toString();
      // Once ready, stdout (the access log) is only drained: kept, it would grow with every request.
      if (ready.test(stdout)) { clearTimeout(timer); child.stdout!.off('data', onStdout); resolve(); }
    };
    child.stdout!.on('data', onStdout);
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`${name} exited with ${code} before it was ready:\n${stderr}`)); });
  });
  child.stdout!.resume();
  const pid = child.pid!;
  const running: RunningProcess = {
    name,
    pid,
    url,
    peakMemoryMb: () => peakMemoryMb(pid),
    markMeasuring() {
      running.measuringFrom ??= Number(process.hrtime.bigint() / 1000n);
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  return running;
}

/** `node <SERVICE_NODE_FLAGS> <dist>/src/server.js` on its own port over the bench database. */
export function startService(options: ServiceOptions): Promise<RunningProcess> {
  const args = options.profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`, `--cpu-prof-name=${options.name}.cpuprofile`]
    : [];
  args.push(...SERVICE_NODE_FLAGS, path.join(options.dist, 'src', 'server.js'));
  return startProcess(options.name, args, serviceEnv(options), /sdx listening/, `http://127.0.0.1:${options.port}`);
}
