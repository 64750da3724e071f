/** The bench's HTTP client: plain fetch over keep-alive connections, bodies serialised before the clock starts. */
export interface Answer {
  status: number;
  text: string;
}

export async function request(
  method: string,
  url: string,
  options: { key?: string; body?: string | Buffer; contentType?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetch(url, { method, headers, body: options.body as BodyInit | undefined });
  return { status: response.status, text: await response.text() };
}

/** Fails the bench loudly when the service answered something other than what the scenario expects. */
export function expectStatus(answer: Answer, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status}: ${answer.text.slice(0, 500)}`);
}
