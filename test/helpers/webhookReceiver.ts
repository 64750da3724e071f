import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got, as it came. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  text: string;
  body: any;
  at: number;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`: subscriptions add a path of their own. */
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/**
 * A webhook receiver on the loopback interface (allowed with WEBHOOKS_ALLOW_INSECURE=1). `answer` chooses
 * each request's status; it may wait, to play a slow receiver.
 */
export async function startReceiver(answer: (request: Received) => number | Promise<number> = () => 200): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const request: Received = { path: req.url ?? '', headers: req.headers as Record<string, string>, text, body: JSON.parse(text), at: Date.now() };
      const status = await answer(request);
      received.push(request);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
