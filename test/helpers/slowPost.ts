import net from 'node:net';
import type { Knex } from 'knex';
import { present } from './only.js';

/** What the service answered a raw request. */
export interface Exchange { status: number; headers: Record<string, string>; body: string }

/**
 * A POST whose body arrives in two parts: the headers and the first half at once, the rest only when
 * `finish` is called, as a client on a slow link sends a large body. The service looks the key up from
 * the headers before it reads a byte of the body (spec, Errors), so what a test does in between happens
 * while the request is under way.
 */
function slowPost(baseUrl: string, path: string, key: string, body: string, contentType = 'application/json'): { finish: () => Promise<Exchange> } {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  const bytes = Buffer.from(body, 'utf8');
  const half = Math.floor(bytes.length / 2);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write([`POST ${path} HTTP/1.1`, `Host: ${hostname}`, `Content-Type: ${contentType}`, `Content-Length: ${bytes.length}`,
    `Authorization: Bearer ${key}`, 'Connection: close', '', ''].join('\r\n'));
  socket.write(bytes.subarray(0, half));
  return {
    async finish() {
      socket.write(bytes.subarray(half));
      await closed;
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      return {
        status: Number(statusLine.split(' ')[1]),
        headers: Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])),
        body: rest.join('\r\n\r\n'),
      };
    },
  };
}

/** How many requests the key has been counted for. */
export async function requestsOf(knex: Knex, keyId: number): Promise<number> {
  return Number(present(await knex('api_keys').where({ id: keyId }).first<{ request_count: number | string } | undefined>('request_count'), `key ${keyId}`).request_count);
}

/** Starts a slow POST and resolves once the service has looked its key up (and counted the request) from the headers alone. */
export async function slowPostOnceCounted(
  knex: Knex, baseUrl: string, path: string, key: { key: string; id: number }, body: string, contentType?: string,
): Promise<{ finish: () => Promise<Exchange>; countedBefore: number }> {
  const before = await requestsOf(knex, key.id);
  const upload = slowPost(baseUrl, path, key.key, body, contentType);
  for (let tries = 0; (await requestsOf(knex, key.id)) === before; tries++) {
    if (tries > 200) throw new Error('the service never looked the key up');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { ...upload, countedBefore: before };
}
