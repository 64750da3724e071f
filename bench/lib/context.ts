import { createServer } from 'node:net';
import type { BenchDatabase } from './database.js';
import { startService, type RunningProcess } from './service.js';

/** What every scenario module receives from bench/run.ts. */
export interface BenchContext {
  db: BenchDatabase;
  /** Folder of the compiled service. */
  dist: string;
  /** Set with BENCH_PROFILE=1: services run under `node --cpu-prof` and write their profiles here. */
  profileDir?: string;
  /** Measured repetitions of each scenario (BENCH_REPS, default 9; the load scenarios use fewer). */
  repetitions: number;
  log: (message: string) => void;
  /** A service process on a free loopback port; every one started is stopped when the bench ends. */
  service(name: string): Promise<RunningProcess>;
  /** Keeps track of a process the scenario started itself (the bare Koa floor), to stop it at the end. */
  track(process: RunningProcess): RunningProcess;
}

/** A port that was free a moment ago on 127.0.0.1 (the service takes its port from PORT). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function createContext(options: { db: BenchDatabase; dist: string; profileDir?: string; repetitions: number }): BenchContext & {
  stopAll(): Promise<void>;
  /** When each process began to be measured, by process name (for the CPU profile summaries). */
  measuringFrom(): Map<string, number>;
} {
  const running: RunningProcess[] = [];
  const started = Date.now();
  const track = (p: RunningProcess) => { running.push(p); return p; };
  return {
    ...options,
    log: (message) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`),
    async service(name) {
      const port = await freePort();
      return track(await startService({ name, port, databaseUrl: options.db.url, dist: options.dist, profileDir: options.profileDir }));
    },
    track,
    measuringFrom: () => new Map(running.filter((p) => p.measuringFrom !== undefined).map((p) => [p.name, p.measuringFrom!])),
    async stopAll() {
      await Promise.all(running.map((p) => p.stop()));
    },
  };
}
