import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The members of a webhook body the tests read; tests check each whole body against the spec's `webhooks`
 * with `assertWebhookMatchesSpec`, so this narrow view does not stand in for that check.
 */
interface WebhookBody {
  type: string;
  timestamp: string;
  data: { study?: string; subject?: string; site?: string; instance?: number; fields?: string[] } & Record<string, unknown>;
}

/** One POST the receiver got, as it came. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  text: string;
  body: WebhookBody;
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
    req.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const request: Received = { path: req.url ?? '', headers: req.headers as Record<string, string>, text, body: JSON.parse(text) as WebhookBody, at: Date.now() };
        const status = await answer(request);
        received.push(request);
        res.writeHead(status).end();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
