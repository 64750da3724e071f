import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, createServices } from '../../src/app.js';
import { listen } from '../../src/listen.js';
import type { Database } from '../../src/db/knex.js';
import { scanResponse } from './responseScan.js';
import { assertMatchesSpec, operationOf } from './specValidation.js';
import { testConfig, testDatabase } from './testDatabase.js';

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  /** A raw body sent as it is (for NDJSON, broken JSON, padding). */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface TestApp {
  db: Database;
  baseUrl: string;
  call<T = unknown>(method: string, path: string, options?: CallOptions): Promise<Reply<T>>;
  close(): Promise<void>;
}

/** The real service on an ephemeral port over the suite's database; `env` overrides its configuration. */
export async function startTestApp(env: NodeJS.ProcessEnv = {}): Promise<TestApp> {
  const db = await testDatabase();
  const services = createServices(testConfig(env), db);
  const app = await createApp(services);
  const server: Server = listen(app, services.config, 0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    db,
    baseUrl,
    async call<T>(method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
      let body: string | Buffer | undefined;
      if (options.raw !== undefined) body = options.raw;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
      const response = await fetch(`${baseUrl}${path}`, { method, headers, body: body as BodyInit | undefined });
      const text = await response.text();
      const contentType = response.headers.get('content-type') ?? '';
      scanResponse(`${method} ${path}`, contentType, text);
      const parsed: unknown = text && /^application\/(problem\+)?json\b/.test(contentType) ? JSON.parse(text) : text;
      const [route = path] = path.split('?');
      const operationId = await operationOf(method, route);
      if (operationId) await assertMatchesSpec(operationId, response.status, contentType, parsed);
      else await assertMatchesSpec(null, response.status, contentType, parsed);
      // The caller's T names the body the contract gives this answer, which was checked against the contract just above.
      return { status: response.status, headers: response.headers, body: parsed as T };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
