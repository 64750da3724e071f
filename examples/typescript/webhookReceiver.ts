/**
 * A receiver of sdx's webhooks: an HTTP server that checks each delivery's Standard Webhooks signature
 * with the typed client's verifyWebhook, skips a delivery it has already handled (deliveries come at least
 * once), and prints the event. The payload names what happened but carries no values: a real receiver would
 * now read the details with its API key (the subject's records, the query, the FHIR import).
 *
 *   SDX_WEBHOOK_SECRET=whsec_… PORT=9000 npx tsx examples/typescript/webhookReceiver.ts
 *
 * Answers 204 to a delivery it accepted, 400 to one whose signature or timestamp does not hold (sdx
 * retries only failures, so a forged delivery is simply dropped), and 405 to anything but POST.
 */
import { createServer } from 'node:http';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/index.js';

interface SdxEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

const secret = process.env.SDX_WEBHOOK_SECRET;
if (!secret) {
  console.error('Set SDX_WEBHOOK_SECRET to the secret sdx showed when the subscription was made (whsec_…).');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 9000);
/** The ids of deliveries handled; a real receiver keeps them in its database, beside what it did. */
const handled = new Set<string>();

const server = createServer((request, response) => {
  if (request.method !== 'POST') {
    response.writeHead(405).end();
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    verifyWebhook<SdxEvent>(secret, request.headers, body).then((event) => {
      const id = String(request.headers['webhook-id']);
      if (!handled.has(id)) {
        handled.add(id);
        console.log(JSON.stringify({ id, type: event.type, data: event.data }));
      }
      response.writeHead(204).end();
    }, (error: unknown) => {
      const refused = error instanceof WebhookVerificationError;
      console.error(refused ? `refused a delivery: ${error.message}` : error);
      response.writeHead(refused ? 400 : 500).end();
    });
  });
});
server.listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/`));
