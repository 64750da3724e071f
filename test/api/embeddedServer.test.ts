import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { present } from '../helpers/only.js';
import { until } from '../helpers/serviceActivity.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { hintOf } from '../../src/domain/apiKeys/keyValue.js';
import { DATABASE_VARIABLES } from '../helpers/testDatabase.js';

/**
 * Two service processes on two data folders of their own, with no port setting at all, as two
 * checkouts on one machine would run them; the command line pointed at each folder; and how each
 * process stops (src/db/embedded.ts, src/server.ts). These data folders are this file's alone.
 */

const run = promisify(execFile);
const FOLDERS = { a: 'test-output/embedded-a', b: 'test-output/embedded-b', d: 'test-output/embedded-d', e: 'test-output/embedded-e' } as const;
const NONE = 'test-output/embedded-none';

/** The command line with only DATA_DIR chosen (nothing inherited points it elsewhere), and its one JSON object. */
async function sdxIn(dataDir: string, ...args: string[]): Promise<unknown> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test' };
  for (const name of DATABASE_VARIABLES) delete env[name];
  const { stdout } = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', ...args, '--json'], { env: { ...env, DATA_DIR: dataDir } })
    .catch((e: { stdout: string }) => e);
  return JSON.parse(String(stdout).trim()) as unknown;
}

/** The running postmaster of a data folder, from its pid file: pid, port, socket folder and listen address. */
function postmasterOf(dataDir: string): { pid: number; socketDir: string; listen: string } | undefined {
  const file = path.resolve(dataDir, 'pg', 'postmaster.pid');
  if (!fs.existsSync(file)) return undefined;
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  return { pid: Number(lines[0]), socketDir: present(lines[4], 'the socket folder'), listen: present(lines[5], 'the listen address').trim() };
}

/** What a service process that did not exit is doing: its output, its kernel state, its threads and the processes around it. */
async function diagnose(service: ServiceProcess): Promise<string> {
  const proc = (what: string) => { try { return fs.readFileSync(`/proc/${service.pid}/${what}`, 'utf8'); } catch (e) { return String(e); } };
  const sh = (command: string) => run('sh', ['-c', command], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 }).then(({ stdout, stderr }) => stdout + stderr, (e: { stdout?: string; stderr?: string; message: string }) => `${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  const tasks = await sh(`for t in /proc/${service.pid}/task/*; do echo "$t $(cat $t/comm) $(cut -d' ' -f3 $t/stat) $(cat $t/wchan)"; done`);
  return [
    `--- output\n${service.output()}`,
    `--- status\n${proc('status').split('\n').filter((l) => /^(State|Threads|SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt)/.test(l)).join('\n')}`,
    `--- wchan ${proc('wchan')}`,
    `--- stack\n${proc('stack')}`,
    `--- tasks\n${tasks}`,
    `--- fds\n${await sh(`ls -l /proc/${service.pid}/fd`)}`,
    `--- processes\n${await sh('ps -eo pid,ppid,stat,wchan:30,args --forest | grep -E "node|postgres" | grep -v grep')}`,
    `--- gdb\n${await sh(`command -v gdb >/dev/null && gdb -p ${service.pid} -batch -ex 'thread apply all bt 30' 2>&1 | grep -vE '^(\\[New|Reading|warning)' | head -300`)}`,
  ].join('\n');
}

/**
 * The exit of a service process after SIGTERM. It must come within 10 s (src/server.ts); one still running
 * 30 s later (a loaded machine given its margin) never will, and fails at once with what it is doing,
 * rather than at the test's timeout with nothing to go on.
 */
async function exitOf(service: ServiceProcess, ms = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'running'>((resolve) => { timer = setTimeout(() => resolve('running'), ms); });
  const exited = await Promise.race([service.exited, late]);
  clearTimeout(timer);
  if (exited !== 'running') return exited;
  throw new Error(`the service process ${service.pid} had not exited ${ms / 1000} s after SIGTERM\n${await diagnose(service)}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the embedded server of a data folder', function () {
  this.timeout(180_000);
  const services: Partial<Record<'a' | 'b' | 'c' | 'd', ServiceProcess>> = {};
  const keys: Partial<Record<'a' | 'b', string>> = {};

  before(function () {
    this.timeout(300_000);
    for (const folder of [...Object.values(FOLDERS), NONE]) fs.rmSync(folder, { recursive: true, force: true });
  });
  after(async () => {
    // A process that did not exit (a failure already reported) is killed rather than waited for.
    await Promise.all(Object.values(services).map(async (s) => {
      const late = setTimeout(() => s.kill('SIGKILL'), 15_000);
      await s.stop();
      clearTimeout(late);
    }));
    for (const folder of Object.values(FOLDERS)) {
      const left = postmasterOf(folder);
      if (left && alive(left.pid)) process.kill(left.pid, 'SIGQUIT');
    }
  });

  it('starts two services on two data folders with no port settings, each server on a socket inside its own folder and on no TCP port', async () => {
    [services.a, services.b] = await Promise.all([
      startServiceProcess({ DATABASE_URL: '', DATA_DIR: path.resolve(FOLDERS.a) }),
      startServiceProcess({ DATABASE_URL: '', DATA_DIR: path.resolve(FOLDERS.b) }),
    ]);
    for (const folder of [FOLDERS.a, FOLDERS.b]) {
      const postmaster = postmasterOf(folder)!;
      expect(postmaster.socketDir).to.equal(path.resolve(folder, 'pg'));
      expect(postmaster.listen, 'no TCP address').to.equal('');
      expect(fs.statSync(path.resolve(folder, 'pg')).mode & 0o077, 'the socket folder is its owner\'s alone').to.equal(0);
    }
    expect(postmasterOf(FOLDERS.a)!.pid).to.not.equal(postmasterOf(FOLDERS.b)!.pid);
  });

  it('points the command line at the database of the folder it is given: each sees only its own keys', async () => {
    for (const name of ['a', 'b'] as const) {
      const demo = await sdxIn(FOLDERS[name], 'demo') as { key: string };
      expect(demo.key, JSON.stringify(demo)).to.be.a('string');
      keys[name] = demo.key;
    }
    for (const [name, other] of [['a', 'b'], ['b', 'a']] as const) {
      const listed = await sdxIn(FOLDERS[name], 'key', 'list', 'DEMO') as { keys: { hint: string }[] };
      expect(listed.keys.map((k) => k.hint)).to.deep.equal([hintOf(keys[name]!)]);
      // The service of the folder is on the same database as the command line there, and on no other.
      const mine = await fetch(`${services[name]!.baseUrl}/api/v1/studies/DEMO`, { headers: { authorization: `Bearer ${keys[name]}` } });
      const theirs = await fetch(`${services[name]!.baseUrl}/api/v1/studies/DEMO`, { headers: { authorization: `Bearer ${keys[other]}` } });
      expect([mine.status, theirs.status], `service ${name}`).to.deep.equal([200, 401]);
    }
  });

  it('refuses to make a new, empty database in a folder that has none, and leaves no folder behind', async () => {
    const consent = await sdxIn(NONE, 'patient', 'consent', 'DEMO', '01-001', '--given', '2026-01-05');
    expect(consent).to.deep.equal({ error: { code: 'no_database', message: `no sdx database in ./${NONE}: start the service, or set DATA_DIR or DATABASE_URL` } });
    expect(fs.existsSync(NONE)).to.equal(false);
  });

  it('exits within 10 s of SIGTERM when its embedded server was killed under it', async () => {
    const service = services.b!;
    const { pid } = postmasterOf(FOLDERS.b)!;
    process.kill(pid, 'SIGKILL');
    await until(() => Promise.resolve(!alive(pid)), 'the embedded server to be gone');
    const started = Date.now();
    service.kill('SIGTERM');
    const exited = await Promise.race([service.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
    expect(exited, service.output()).to.deep.equal({ code: 0, signal: null });
    expect(Date.now() - started).to.be.lessThan(10_000);
  });

  it('leaves its embedded server running when it goes while another process still uses it', async () => {
    services.c = await startServiceProcess({ DATABASE_URL: '', DATA_DIR: path.resolve(FOLDERS.a) });
    const { pid } = postmasterOf(FOLDERS.a)!;
    services.a!.kill('SIGTERM');
    expect(await exitOf(services.a!), services.a!.output()).to.deep.equal({ code: 0, signal: null });
    expect(alive(pid), 'the postmaster').to.equal(true);
    const read = await fetch(`${services.c.baseUrl}/api/v1/studies/DEMO`, { headers: { authorization: `Bearer ${keys.a}` } });
    expect(read.status).to.equal(200);
  });

  it('stops the embedded server when the last process using it is SIGTERMed, and one it started alone: no postmaster is left', async () => {
    const { pid } = postmasterOf(FOLDERS.a)!;
    services.c!.kill('SIGTERM');
    expect(await exitOf(services.c!), services.c!.output()).to.deep.equal({ code: 0, signal: null });
    expect(alive(pid), 'the postmaster').to.equal(false);
    expect(postmasterOf(FOLDERS.a), 'a clean shutdown removes the pid file').to.equal(undefined);

    services.d = await startServiceProcess({ DATABASE_URL: '', DATA_DIR: path.resolve(FOLDERS.d) });
    const started = postmasterOf(FOLDERS.d)!.pid;
    services.d.kill('SIGTERM');
    expect(await exitOf(services.d), services.d.output()).to.deep.equal({ code: 0, signal: null });
    expect(alive(started), 'the postmaster').to.equal(false);
    expect(postmasterOf(FOLDERS.d)).to.equal(undefined);
  });

  it('fails to start on a port already taken, saying so, and leaves no embedded server running without it', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, () => resolve()));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      let refused = '';
      await startServiceProcess({ DATABASE_URL: '', DATA_DIR: path.resolve(FOLDERS.e), PORT: String(port) }).catch((error: Error) => { refused = error.message; });
      expect(refused).to.match(/sdx failed to start: .*EADDRINUSE/);
      expect(fs.existsSync(path.resolve(FOLDERS.e, 'pg', 'PG_VERSION')), 'the server was made').to.equal(true);
      expect(postmasterOf(FOLDERS.e), 'no postmaster is left').to.equal(undefined);
    } finally {
      taken.close();
    }
  });
});
