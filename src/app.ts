import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import type { OpenAPIBackend } from 'openapi-backend';
import type { Config } from './config.js';
import type { Database } from './db/knex.js';
import { createRateLimiter } from './db/rateLimits.js';
import { DomainError, isDomainError } from './domain/errors.js';
import { createApi } from './handlers/api.js';
import { negotiateLang } from './handlers/messages/index.js';
import { problemOf } from './handlers/problem.js';
import type { RequestState, Services } from './handlers/requestState.js';
import { loadSpec } from './handlers/spec.js';
import { createPortal } from './portal/index.js';

/** Every request body the API declares is at most 5 MB (interface description, "Limits"). */
const BODY_LIMIT = 5 * 1024 * 1024;
const JSON_TYPES = ['application/json', 'application/fhir+json'];
const TEXT_TYPES = ['application/fhir+ndjson', 'application/x-ndjson'];

const parseBody = koaBody({
  json: true,
  text: true,
  urlencoded: false,
  multipart: false,
  jsonStrict: true,
  jsonLimit: BODY_LIMIT,
  textLimit: BODY_LIMIT,
  jsonTypes: JSON_TYPES,
  textTypes: TEXT_TYPES,
});

/** PostgreSQL unreachable or shutting down: the client should retry, not fix its request. */
function databaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string; name?: string };
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08006', '08001', '08003'].includes(e.code ?? '')
    || e.name === 'KnexTimeoutError' || /Connection terminated|connection to server|Client has encountered a connection error/i.test(e.message ?? '');
}

export function createServices(config: Config, db: Database): Services {
  return { config, db, rateLimiter: createRateLimiter(db.knex, config.rateLimitPerMinute), spec: loadSpec() };
}

/**
 * The whole HTTP service: one error middleware that turns every refusal into a problem body, the
 * request context (id, language), body parsing bounded per operation, then openapi-backend, which
 * routes by operationId and validates every request against spec/openapi.yaml.
 */
export async function createApp(services: Services): Promise<Koa<RequestState>> {
  const api: OpenAPIBackend = await createApi(services);
  const app = new Koa<RequestState>();
  app.proxy = true;
  // Koa's default error listener prints stacks of every thrown error; ours logs only real failures.
  app.silent = true;

  app.use(async (ctx, next) => {
    ctx.state.services = services;
    ctx.state.requestId = randomUUID();
    ctx.state.lang = negotiateLang(ctx.query.lang, ctx.get('accept-language'));
    ctx.set('X-Request-Id', ctx.state.requestId);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
    ctx.set('Referrer-Policy', 'no-referrer');
    try {
      await next();
    } catch (error) {
      let domainError: DomainError;
      if (isDomainError(error)) domainError = error;
      else if (databaseUnavailable(error)) domainError = new DomainError('unavailable', { retry_after: 5 });
      else {
        domainError = new DomainError('internal');
        process.stderr.write(`${JSON.stringify({ level: 'error', request_id: ctx.state.requestId, method: ctx.method, path: ctx.path, error: error instanceof Error ? error.stack : String(error) })}\n`);
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
    const operation = api.router.matchOperation({ method: ctx.method, path: ctx.path, headers: ctx.headers as Record<string, string>, query: ctx.query as Record<string, string> });
    const declared = operation?.requestBody as { content?: Record<string, unknown> } | undefined;
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (declared && hasBody) {
      // Refused before a byte of the body is read: an oversized body never reaches memory.
      if (Number(ctx.get('content-length') || 0) > BODY_LIMIT) throw new DomainError('payload_too_large', { limit: '5 MB' });
      const type = ctx.request.type;
      if (!Object.keys(declared.content ?? {}).includes(type)) throw new DomainError('unsupported_media_type', { type: type || 'none' });
      try {
        await parseBody(ctx, async () => undefined);
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 413) {
          // The parser stopped reading a body sent without Content-Length: let Node discard the rest, as it
          // does for any unread body, or the client may get a connection reset instead of this answer.
          ctx.req.resume();
          throw new DomainError('payload_too_large', { limit: '5 MB' });
        }
        if (status === 415) throw new DomainError('unsupported_media_type', { type });
        if (operation?.operationId === 'importFhirRecord') throw new DomainError('fhir_not_fhir', { reason: 'the body is not valid JSON' });
        throw new DomainError('invalid_body', {}, [{ pointer: '', code: 'invalid_json' }]);
      }
    }
    await next();
  });

  app.use((ctx) =>
    api.handleRequest(
      { method: ctx.method, path: ctx.path, headers: ctx.headers as Record<string, string>, query: ctx.query as Record<string, string>, body: ctx.request.body },
      ctx,
    ),
  );
  return app;
}
