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
