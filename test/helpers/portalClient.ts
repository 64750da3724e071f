import { scanResponse } from './responseScan.js';

/**
 * A browser-like client of the staff portal for plain HTTP tests: it keeps cookies, does not follow
 * redirects (tests assert them), and sends back the CSRF token of the last page it read.
 */
export interface PortalReply {
  status: number;
  headers: Headers;
  html: string;
  /** The Location of a redirect, relative to the service. */
  location: string | null;
}

function csrfTokenOf(html: string): string | undefined {
  return /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
}

export class PortalClient {
  readonly cookies = new Map<string, string>();
  /** The synchronizer token from the last page read; sent with every post unless told otherwise. */
  csrf: string | undefined;

  constructor(readonly baseUrl: string) {}

  private async request(method: string, path: string, body?: URLSearchParams, headers: Record<string, string> = {}): Promise<PortalReply> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: { ...(cookie ? { cookie } : {}), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers },
      body,
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const html = await response.text();
    scanResponse(`${method} ${path}`, response.headers.get('content-type') ?? '', html);
    this.csrf = csrfTokenOf(html) ?? this.csrf;
    const location = response.headers.get('location');
    return { status: response.status, headers: response.headers, html, location: location && location.replace(this.baseUrl, '') };
  }

  get(path: string, headers?: Record<string, string>): Promise<PortalReply> {
    return this.request('GET', path, undefined, headers);
  }

  /** Posts a form; `_csrf` is the last page's token unless the fields give their own (or `null` to leave it out). */
  post(path: string, fields: Record<string, string | string[] | null> = {}): Promise<PortalReply> {
    const body = new URLSearchParams();
    const withToken: Record<string, string | string[] | null> = { _csrf: this.csrf ?? null, ...fields };
    for (const [name, value] of Object.entries(withToken)) {
      if (value === null) continue;
      for (const v of ([] as string[]).concat(value)) body.append(name, v);
    }
    return this.request('POST', path, body);
  }

  /** Opens the sign-in form and signs in; returns the answer to the post (303 on success). */
  async signIn(email: string, password: string, next?: string): Promise<PortalReply> {
    await this.get(`/portal/sign-in${next ? `?next=${encodeURIComponent(next)}` : ''}`);
    return this.post('/portal/sign-in', { email, password, ...(next ? { next } : {}) });
  }
}
