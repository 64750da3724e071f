import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { checkResolvedAddresses, checkWebhookUrl, type AddressPolicy } from './domain/webhooks/addressPolicy.js';
import { isDomainError } from './domain/errors.js';
import type { WebhookEventData } from './domain/stores.js';

/** What a webhook POST carries: the body of spec/openapi.yaml `webhooks`. */
export interface OutgoingEvent {
  eventId: number;
  type: string;
  createdAt: Date;
  data: WebhookEventData;
}

export interface SendResult {
  ok: boolean;
  /** The receiver's HTTP status; null when it gave none. */
  status: number | null;
  /** Why the attempt failed, for the delivery log; null when it succeeded. */
  error: string | null;
}

/** Connections kept open between deliveries to a receiver: a run of events costs no new handshake each. */
const AGENTS = { 'http:': new http.Agent({ keepAlive: true, maxSockets: 8 }), 'https:': new https.Agent({ keepAlive: true, maxSockets: 8 }) };

/** The most of a receiver's answer read before it is dropped: only its status matters. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The webhook's body as sent: `{ type, timestamp, data }`. */
function eventBody(event: OutgoingEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.createdAt.toISOString(), data: event.data });
}

/**
 * Resolves the host as the connection does, and refuses it unless every address it resolved to is
 * allowed: the check and the connection use the same answer, so a name re-pointed to an inside
 * address between the two (DNS rebinding) reaches nothing.
 */
function guardedLookup(url: string, policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return (callback as (e: Error) => void)(error);
      try {
        checkResolvedAddresses(url, addresses.map((a) => a.address), policy);
      } catch {
        return (callback as (e: Error) => void)(Object.assign(new Error(`the address of ${hostname} is not public`), { code: 'WEBHOOK_ADDRESS_REFUSED' }));
      }
      if (options.all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
      const [first] = addresses;
      // dns.lookup answers ENOTFOUND rather than an empty list; an empty one is refused all the same.
      if (first === undefined) return (callback as (e: Error) => void)(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
      return callback(null, first.address, first.family);
    });
  };
}

/**
 * POSTs one event to a subscription, signed with the Standard Webhooks headers (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) by the standardwebhooks library. Any 2xx answer within
 * the timeout is a delivery; redirects are not followed (they could lead to an inside address).
 */
export async function sendWebhook(
  target: { url: string; secret: string },
  event: OutgoingEvent,
  options: { policy: AddressPolicy; timeoutMs: number },
): Promise<SendResult> {
  let url: URL;
  try {
    url = checkWebhookUrl(target.url, options.policy);
  } catch (error) {
    return { ok: false, status: null, error: isDomainError(error) ? `address refused: ${String(error.fieldErrors[0]?.params?.variant)}` : String(error) };
  }
  const body = eventBody(event);
  const id = `evt_${event.eventId}`;
  const now = new Date();
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'sdx-webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(target.secret).sign(id, now, body),
  };
  const { reusedSocketLost, ...first } = await post(url, headers, body, target.url, options);
  if (!reusedSocketLost) return first;
  // A kept-alive connection the receiver closed meanwhile fails before it is answered: that is no attempt
  // of the receiver's, so it is made again at once (the agent then opens a new connection).
  const { ok, status, error } = await post(url, headers, body, target.url, options);
  return { ok, status, error };
}

async function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  address: string,
  options: { policy: AddressPolicy; timeoutMs: number },
): Promise<SendResult & { reusedSocketLost?: boolean }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.request(url, {
      // A kept-alive connection was checked when it was opened, to the address it still reaches.
      method: 'POST', headers, agent: AGENTS[url.protocol as 'http:' | 'https:'], lookup: guardedLookup(address, options.policy), signal: AbortSignal.timeout(options.timeoutMs),
    }, (response) => {
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) response.destroy();
      });
      const status = response.statusCode ?? null;
      const done = () => resolve({ ok: status !== null && status >= 200 && status < 300, status, error: status !== null && status >= 200 && status < 300 ? null : `answered ${status}` });
      response.once('end', done).once('close', done).once('error', done);
    });
    request.once('error', (error: NodeJS.ErrnoException) => {
      const reason = error.name === 'AbortError' || error.name === 'TimeoutError' ? `no answer within ${options.timeoutMs / 1000} s` : error.code ?? error.message;
      resolve({ ok: false, status: null, error: reason, reusedSocketLost: request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') });
    });
    request.end(body);
  });
}

/** The addresses a host name resolves to now, as a subscription's address is checked when it is made. */
export async function resolveHost(host: string): Promise<string[]> {
  return (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
}
