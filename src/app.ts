import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import { accessLog } from './accessLog.js';
import type { Config } from './config.js';
import { createKeyLookup } from './db/keyLookup.js';
import type { Database } from './db/knex.js';
import { isDatabaseUnavailable } from './db/pgErrors.js';
import { createReadAhead } from './db/readAhead.js';
import { removalCount } from './db/readPages.js';
import { DomainError, isDomainError } from './domain/errors.js';
import { createApi } from './handlers/api.js';
import { negotiateLang } from './messages/index.js';
import { problemOf } from './handlers/problem.js';
import type { RequestState, Services } from './requestState.js';
import { keyRequestOf, recheckAfterBody } from './handlers/requestKey.js';
import { loadSpec } from './handlers/spec.js';
import { logFailure } from './logFailure.js';
import { createPortal } from './portal/index.js';
import { BodyBudget, discardBody, readBody, type BodyFault, UnreadableBody } from './requestBody.js';

/** Every request body the API declares is at most 5 MB (interface description, "Limits"). */
const BODY_LIMIT = 5 * 1024 * 1024;
const JSON_TYPES = ['application/json', 'application/fhir+json'];
/** When a client refused for bodies held at once may try again: a few seconds lets most bodies in flight finish. */
const BUSY_RETRY_SECONDS = 5;

/** The field error of a body that is not JSON, by why it could not be read. */
const BODY_FIELD_CODES: Partial<Record<BodyFault, string>> = { not_utf8: 'invalid_utf8', corrupt_coding: 'invalid_content_coding' };
/** The same, as the FHIR call's `fhir_not_fhir` reason. */
const FHIR_REASONS: Partial<Record<BodyFault, string>> = {
  not_utf8: 'the body is not UTF-8 text',
  corrupt_coding: 'the body cannot be decompressed as its Content-Encoding says',
};

/** A body that could not be read, as the problem of the call it was sent to. */
function bodyRefusal(error: UnreadableBody, operationId: string | undefined, type: string, config: Config): DomainError {
  if (error.fault === 'too_slow') return new DomainError('body_timeout', { seconds: config.bodyDeadlineSeconds });
  if (error.fault === 'busy') return new DomainError('busy', { retry_after: BUSY_RETRY_SECONDS });
  if (error.fault === 'too_large') return new DomainError('payload_too_large', { limit: '5 MB' });
  if (error.fault === 'unknown_coding') return new DomainError('unsupported_media_type', { type, coding: error.coding, variant: 'coding' });
  if (operationId === 'importFhirRecord' || operationId === 'importFhirNdjson') return new DomainError('fhir_not_fhir', { reason: FHIR_REASONS[error.fault] ?? 'the body is not valid JSON' });
  return new DomainError('invalid_body', {}, [{ pointer: '', code: BODY_FIELD_CODES[error.fault] ?? 'invalid_json' }]);
}

/** A body refused from its headers alone: a declared length over the limit (413), a type the call does not take (415). */
function headerRefusal(length: number, type: string, declared: { content?: Record<string, unknown>; 'x-also-accepts'?: string[] }): DomainError | undefined {
  if (length > BODY_LIMIT) return new DomainError('payload_too_large', { limit: '5 MB' });
  if (![...Object.keys(declared.content ?? {}), ...(declared['x-also-accepts'] ?? [])].includes(type)) return new DomainError('unsupported_media_type', { type: type || 'none' });
  return undefined;
}

/** The headers every answer carries, whatever its status (SECURITY.md, API8). */
export function securityHeaders(config: Pick<Config, 'baseUrl'>): Record<string, string> {
  return {
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
    'Referrer-Policy': 'no-referrer',
    // Browsers honour it only over TLS: behind an https BASE_URL, the portal is never reached over plain http again.
    ...(config.baseUrl.startsWith('https://') ? { 'Strict-Transport-Security': 'max-age=31536000' } : {}),
  };
}

export function createServices(config: Config, db: Database): Services {
  return {
    config, db, keyLookup: createKeyLookup(db.knex, config.rateLimitPerMinute), bodyBudget: new BodyBudget(config.bodyBufferMegabytes * 1024 * 1024),
    readAhead: createReadAhead((studyId) => removalCount(db.knex, studyId)), spec: loadSpec(),
  };
}

/**
 * The whole HTTP service: one error middleware that turns every refusal into a problem body, the
 * request context (id, language), body parsing bounded per operation, then the API (handlers/api.ts),
 * which routes by operationId and validates every request against spec/openapi.yaml with openapi-backend.
 */
export async function createApp(services: Services): Promise<Koa<RequestState>> {
  const api = await createApi(services);
  const app = new Koa<RequestState>();
  app.proxy = true;
  // Koa's default error listener prints stacks of every thrown error; ours logs only real failures.
  app.silent = true;

  // Outermost, so it sees the status the error middleware settles on.
  if (services.config.accessLog) app.use(accessLog());
  app.use(async (ctx, next) => {
    ctx.state.services = services;
    ctx.state.requestId = randomUUID();
    ctx.state.lang = negotiateLang(ctx.query.lang, (...langs) => ctx.acceptsLanguages(...langs));
    ctx.set('X-Request-Id', ctx.state.requestId);
    ctx.set(securityHeaders(services.config));
    try {
      await next();
    } catch (error) {
      let domainError: DomainError;
      if (isDomainError(error)) domainError = error;
      else if (isDatabaseUnavailable(error)) domainError = new DomainError('unavailable', { retry_after: 5 });
      else {
        domainError = new DomainError('internal');
        logFailure({ requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, error);
      }
      const reply = problemOf(domainError, ctx.state.lang, ctx.state.requestId);
      ctx.status = reply.status;
      ctx.body = reply.body;
      for (const [name, value] of Object.entries(reply.headers)) ctx.set(name, value);
    }
  });

  // The staff portal's HTML pages (/portal, /p/<study>) sit outside the API contract: they answer before openapi-backend.
  app.use(createPortal(services));

  app.use(async (ctx, next) => {
    const operation = api.operationOf({ method: ctx.method, path: ctx.path, headers: ctx.headers as Record<string, string>, query: ctx.query as Record<string, string> });
    // `x-also-accepts`: types a call still takes without declaring them (the FHIR JSON call's NDJSON, spec/openapi.yaml).
    const declared = operation?.requestBody as { content?: Record<string, unknown>; 'x-also-accepts'?: string[] } | undefined;
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (declared && hasBody) {
      const type = ctx.request.type;
      const refusal = headerRefusal(Number(ctx.get('content-length') || 0), type, declared);
      if (refusal) {
        // Refused before a byte of the body is kept, so it never reaches memory; the body is discarded up to a bound.
        if (!(await discardBody(ctx.req))) ctx.set('Connection', 'close');
        throw refusal;
      }
      // The key is authenticated (and the request counted) from the headers before a byte of the body is
      // read: a request without a working key is refused at once and costs no memory for its body.
      await keyRequestOf(ctx).catch((error: unknown) => {
        ctx.set('Connection', 'close');
        throw error;
      });
      try {
        // Parsed JSON or NDJSON text: what koa-body's typing of this slot (JsonValue) describes.
        ctx.request.body = (await readBody(ctx.req, {
          limit: BODY_LIMIT, json: JSON_TYPES.includes(type), deadlineMs: services.config.bodyDeadlineSeconds * 1000, budget: services.bodyBudget,
        })) as typeof ctx.request.body;
      } catch (error) {
        if (!(error instanceof UnreadableBody)) throw error;
        if (error.closes) ctx.set('Connection', 'close');
        throw bodyRefusal(error, operation?.operationId, type, services.config);
      }
      // The body may have taken up to the body deadline to arrive: the call is decided on the key and study as they are now.
      recheckAfterBody(ctx);
    }
    await next();
  });

  app.use((ctx) => api.answer(ctx));
  return app;
}
