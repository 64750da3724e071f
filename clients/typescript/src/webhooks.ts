/** The Standard Webhooks headers of an sdx event delivery (https://www.standardwebhooks.com). */
export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export interface VerifyOptions {
  /** How far the delivery's timestamp may be from now, in seconds (default 300), against replays. */
  toleranceSeconds?: number;
  /** The current time (for tests). */
  now?: Date;
}

/** A delivery whose signature, timestamp or headers do not hold: answer it with 400 and do not act on it. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

const SECRET_PREFIX = 'whsec_';
const DEFAULT_TOLERANCE_SECONDS = 300;

/** A header's value from a Node or fetch header object, whatever its case. */
function headerOf(headers: Headers | Record<string, string | string[] | undefined>, name: keyof WebhookHeaders): string {
  const value = headers instanceof Headers ? headers.get(name) : headers[name] ?? headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' || text === '') throw new WebhookVerificationError(`missing ${name} header`);
  return text;
}

/** Bytes of base64 text; undefined when it is not base64. */
function bytesOfBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * Checks an event delivery of sdx and returns its payload, parsed: the signature (HMAC-SHA256 with the
 * subscription's secret, `whsec_…`, as shown once when it was made) over `<webhook-id>.<webhook-timestamp>.<body>`,
 * and a timestamp within `toleranceSeconds` of now. `body` must be the request body exactly as received
 * (the raw text, before any JSON parsing). Rejects with {@link WebhookVerificationError} otherwise.
 * Web Crypto does the HMAC (Node.js 20 and browsers alike), comparing in constant time.
 *
 * A payload names what happened (ids, subject, visit, form, field codes) but carries no values: read
 * the details with your API key. Deliveries come at least once: use `webhook-id` to skip one you have seen.
 */
export async function verifyWebhook<Payload = unknown>(
  secret: string,
  headers: Headers | Record<string, string | string[] | undefined>,
  body: string,
  options: VerifyOptions = {},
): Promise<Payload> {
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  const sentAt = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(sentAt)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - sentAt) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const secretBytes = bytesOfBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (!secretBytes) throw new WebhookVerificationError('the secret is not a whsec_ secret');
  const key = await crypto.subtle.importKey('raw', secretBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',', 2);
    const given = version === 'v1' && signature !== undefined ? bytesOfBase64(signature) : undefined;
    if (given && await crypto.subtle.verify('HMAC', key, given, signed)) return JSON.parse(body) as Payload;
  }
  throw new WebhookVerificationError('no valid signature');
}
