import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

/**
 * The third-party contract check: Stoplight Prism in proxy mode (`prism proxy --errors spec/openapi.yaml
 * <service>`) between a scenario and the live service. Prism validates every request and response
 * against the spec on its own (its validator is not ours), answers 422 for a request that breaks the
 * spec and 500 for a response that does, and logs each violation. The scenario talks to `url`; the test
 * then asserts `violations` is empty.
 */
export interface ContractProxy {
  url: string;
  /** Prism's error and warning lines: every request or response it found breaking the spec. */
  violations: string[];
  /** How many requests went through, so a check of zero violations is known to have checked something. */
  requests: number;
  close(): Promise<void>;
}

const prismCli = join(dirname(createRequire(import.meta.url).resolve('@stoplight/prism-cli/package.json')), 'dist', 'index.js');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startContractProxy(upstream: string): Promise<ContractProxy> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [prismCli, 'proxy', '--errors', '--cors=false', '--host', '127.0.0.1', '--port', String(port), 'spec/openapi.yaml', upstream], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0', SCARF_ANALYTICS: 'false' },
  });
  const proxy: ContractProxy = {
    url: `http://127.0.0.1:${port}`,
    violations: [],
    requests: 0,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onLine = (line: string) => {
      if (/Prism is listening/.test(line)) resolve();
      if (/Request received/.test(line)) proxy.requests += 1;
      // Prism marks each finding with its level; a violation is a warning without --errors, an error with it.
      if (/\berror\b|\bwarning\b|violation/i.test(line) && !/Request received/.test(line)) proxy.violations.push(line.trim());
    };
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = output.split('\n');
      output = lines.pop() ?? '';
      lines.forEach(onLine);
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`prism exited with ${code} before it listened`)));
  });
  return proxy;
}
