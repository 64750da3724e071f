import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

/** Every schema of the API by name: `Schemas['RecordInput']`, `Schemas['FhirImport']`, … */
export type Schemas = components['schemas'];
/** The body of every refusal of a whole request (`application/problem+json`, RFC 9457). */
export type Problem = Schemas['Problem'];
/** An openapi-fetch client over every path of the API: `client.GET('/api/v1/studies/{study_code}', …)`. */
export type SdxClient = Client<paths>;

export interface SdxClientOptions {
  /** The service's address without a path, e.g. `http://localhost:8080`; the paths carry `/api/v1`. */
  baseUrl: string;
  /** The study's API key, sent as `Authorization: Bearer <key>`. Keep it out of source code and logs. */
  key: string;
  /** Language of the messages meant for people (`title`, `detail`, result messages). Codes never change. */
  lang?: 'en' | 'ru';
  /** A fetch of your own (a proxy, a test double). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Called for every response that carries a `Deprecation` header: the call is going away (see the
   * repository's docs/versioning.md). Log it or alert on it; the call keeps working until `sunset`.
   */
  onDeprecation?: (notice: DeprecationNotice) => void;
}

export interface DeprecationNotice {
  method: string;
  url: string;
  /** When the call was deprecated, as sent (`@<unix time>`, RFC 9745). */
  deprecation: string;
  /** The earliest date it may stop working (HTTP date, RFC 8594), when the service gave one. */
  sunset: string | undefined;
  /** Where to read about the replacement (`Link` header), when given. */
  link: string | undefined;
}

/**
 * A typed client of the sdx API v1. Every call returns openapi-fetch's `{ data, error, response }`;
 * pass it to {@link unwrap} to get the data or an {@link SdxApiError}.
 */
export function createSdxClient(options: SdxClientOptions): SdxClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: `Bearer ${options.key}`, ...(options.lang ? { 'Accept-Language': options.lang } : {}) },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const notify = options.onDeprecation;
  if (notify) {
    client.use({
      onResponse({ request, response }) {
        const deprecation = response.headers.get('deprecation');
        if (deprecation !== null) {
          notify({ method: request.method, url: request.url, deprecation, sunset: response.headers.get('sunset') ?? undefined, link: response.headers.get('link') ?? undefined });
        }
        return undefined;
      },
    });
  }
  return client;
}

/** A refused request: the HTTP status and the problem body. Branch on `code`, never on the wording. */
export class SdxApiError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  /** Seconds to wait before a retry, from `Retry-After` (429 `rate_limited`, 503 `unavailable`). */
  readonly retryAfter: number | undefined;

  constructor(response: Response, body: unknown) {
    const problem = isProblem(body) ? body : undefined;
    super(problem ? `${response.status} ${problem.code}: ${problem.detail}` : `${response.status} ${response.statusText}`);
    this.name = 'SdxApiError';
    this.status = response.status;
    this.problem = problem;
    const retry = Number(response.headers.get('retry-after'));
    this.retryAfter = Number.isFinite(retry) && retry > 0 ? retry : undefined;
  }

  /** The problem's stable code (`consent_missing`, `invalid_after`, …), or undefined for a non-sdx answer. */
  get code(): string | undefined {
    return this.problem?.code;
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && typeof (body as Problem).code === 'string' && typeof (body as Problem).status === 'number';
}

/** The data of a successful call; a refusal (any status outside 2xx) throws an {@link SdxApiError}. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw new SdxApiError(result.response, result.error);
  return result.data as T;
}
