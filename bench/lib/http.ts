/**
 * The bench's HTTP client: node:http over keep-alive connections, bodies serialised before the clock
 * starts, answers collected as bytes and decoded once. Not fetch: undici's fetch passes a body through
 * web streams, which for a 1 MB records page or a 3.8 MB FHIR upload cost the client, on the same two
 * cores as the service, several milliseconds the floors' own clients (pg, in-process calls) never pay.
 */
import http from 'node:http';

export interface Answer {
  status: number;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

export function request(
  method: string,
  url: string,
  options: { key?: string; body?: string | Buffer; contentType?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string | number> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    headers['content-length'] = Buffer.byteLength(options.body);
  }
  return new Promise((resolve, reject) => {
    const sent = http.request(url, { method, headers, agent }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      answer.on('error', reject);
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}

/** Fails the bench loudly when the service answered something other than what the scenario expects. */
export function expectStatus(answer: Answer, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status}: ${answer.text.slice(0, 500)}`);
}

/**
 * A GET whose answer is counted as it streams in, never held: how often `needle` (ASCII) occurs, and
 * the bytes. For exports of a whole study, which the client must not buffer either.
 */
export function countedRequest(url: string, options: { key: string; accept?: string }, needle: string): Promise<{ status: number; count: number; bytes: number }> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.key}` };
  if (options.accept) headers.accept = options.accept;
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent }, (answer) => {
      let count = 0;
      let bytes = 0;
      // The end of the previous chunk, so a needle split across two chunks is still found once.
      let carry = '';
      answer.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        const text = carry + chunk.toString('latin1');
        for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
        carry = text.slice(Math.max(0, text.length - needle.length + 1));
      });
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, count, bytes }));
      answer.on('error', reject);
    }).on('error', reject);
  });
}
