import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { only } from './only.js';
import { testEnv } from './testDatabase.js';

const run = promisify(execFile);

/**
 * Runs the real command line (`sdx … --json`) on the suite's database and parses its one JSON object,
 * printed whether the command succeeded or failed.
 */
export async function sdx<T = unknown>(...args: string[]): Promise<T> {
  const { stdout } = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', ...args, '--json'], { env: { ...process.env, ...testEnv } })
    .catch((failed: { stdout: string }) => failed);
  const lines = stdout.trim().split('\n');
  expect(lines, `sdx ${args.join(' ')} prints one JSON object`).to.have.length(1);
  return JSON.parse(only(lines, 'the JSON lines printed')) as T;
}

/** The exit code of a command line run (0 when it succeeded). */
export async function sdxExitCode(...args: string[]): Promise<number> {
  return run('node', ['--import', 'tsx', 'scripts/sdx.ts', ...args, '--json'], { env: { ...process.env, ...testEnv } }).then(() => 0, (e: { code: number }) => e.code);
}

/** Runs the real command line without `--json` and gives what it prints for people. */
export async function sdxText(...args: string[]): Promise<string> {
  const { stdout } = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', ...args], { env: { ...process.env, ...testEnv } });
  return stdout;
}
