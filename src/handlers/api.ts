import { OpenAPIBackend, type Context, type Operation, type ParsedRequest, type Request } from 'openapi-backend';
import addFormatsModule from 'ajv-formats';
import { admissionOf } from '../domain/apiKeys/admission.js';
import type { KeyRight } from '../domain/apiKeys/keyAccess.js';
import { DomainError, type FieldError } from '../domain/errors.js';
import { isStorableText } from '../domain/storableText.js';
import { handlers } from './index.js';
import { keyRequestOf } from './requestKey.js';
import { rememberedRoutes } from './routes.js';
import { routedDocument } from './spec.js';
import { SerializedJson } from './serializedJson.js';
import { StreamedBody } from './streamedBody.js';
import { validationError } from './validationErrors.js';
import type { Services } from '../requestState.js';
import type { KoaContext, OperationId } from './types.js';

// ajv-formats is CommonJS with `exports.default`; under NodeNext its default import is the module object.
const addFormats = addFormatsModule.default;

/** The right each call needs (interface description, Authentication 3); null: no key at all. */
const OPERATION_RIGHTS: Record<OperationId, KeyRight | null> = {
  getStudyDesign: 'any',
  createPatient: 'enrol',
  submitFormRecords: 'write',
  listPatients: 'read',
  listFormRecords: 'read',
  listQueries: 'read',
  openQuery: 'write',
  answerQuery: 'write',
  closeQuery: 'write',
  listAuditTrail: 'read',
  importFhirRecord: 'write',
  importFhirNdjson: 'write',
  listFhirImports: 'read',
  getFhirImport: 'read',
  listDatasets: 'read',
  getDataset: 'read',
  exportOdm: 'read',
  getOpenApi: null,
  getApiDocs: null,
  getApiDocsAsset: null,
};

/** Read calls refuse parameters they do not know, so a misspelt filter is never silently ignored. */
const ALWAYS_ALLOWED_QUERY = new Set(['lang']);

/**
 * Query and path values that PostgreSQL could not even compare (a NUL, sent as `%00`): refused as
 * malformed parameters rather than sent to the database, where they would fail the whole request.
 */
function unstorableParameters(c: Context): FieldError[] {
  const locations = { query: (c.request.query ?? {}) as Record<string, unknown>, path: (c.request.params ?? {}) as Record<string, unknown> };
  return Object.entries(locations).flatMap(([location, values]) => Object.entries(values)
    .filter(([, value]) => [value].flat().some((v: unknown) => typeof v === 'string' && !isStorableText(v)))
    .map(([name]) => ({ pointer: `/${location}/${name}`, code: 'invalid_character' })));
}

/** The spec's example of each parameter of the operation, by the pointer a refusal of it carries. */
function parameterExamples(c: Context): Record<string, unknown> {
  const parameters = (c.operation.parameters ?? []) as { in: string; name: string; example?: unknown }[];
  return Object.fromEntries(parameters.filter((p) => p.example !== undefined)
    .map((p) => [`/${p.in}/${p.in === 'header' ? p.name.toLowerCase() : p.name}`, p.example]));
}

/**
 * A JSON answer as UTF-8 bytes, which Node sends far faster than the same long string (serializedJson.ts);
 * undefined for a text answer.
 */
function jsonBytes(body: unknown): Buffer | undefined {
  if (body instanceof SerializedJson) return body.bytes;
  if (typeof body === 'object' && body !== null && !Buffer.isBuffer(body)) return Buffer.from(JSON.stringify(body), 'utf8');
  return undefined;
}

/** The reply a handler returns, as the one writer below takes it. */
type AnyReply = { status: number; body: unknown; headers?: Record<string, string> };

/** Writes a handler's reply: status, headers, and the body as bytes, a stream or text (one writer for every answer). */
function writeReply(reply: AnyReply, ctx: KoaContext): void {
  if (reply.body instanceof StreamedBody) {
    ctx.status = reply.status;
    for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
    ctx.type = reply.body.contentType;
    ctx.body = reply.body.stream();
    return;
  }
  ctx.status = reply.status;
  for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
  if (reply.status === 304) return;
  const json = jsonBytes(reply.body);
  // Text answers (the docs page and its files) keep the type their handler gave.
  if (json === undefined) {
    ctx.body = reply.body;
    return;
  }
  ctx.type = 'application/json';
  ctx.body = json;
}

/** The refusal of a request no operation takes, by openapi-backend's own answer: no such path (404) or not this method (405). */
function routeRefusal(backend: OpenAPIBackend, request: Request): DomainError {
  try {
    backend.router.matchOperation(request, true);
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('405')) return new DomainError('method_not_allowed', { method: request.method });
  }
  return new DomainError('not_found');
}

/** A request openapi-backend found invalid against the contract, as the problem the call answers. */
function validationRefusal(c: Context): DomainError {
  const records = (c.request.requestBody as { records?: unknown } | undefined)?.records;
  if (c.operation.operationId === 'submitFormRecords' && Array.isArray(records) && records.length > 500) {
    return new DomainError('too_many_records', { max: 500, count: records.length });
  }
  const errors = c.validation.errors ?? [];
  // A FHIR body that is JSON but no resource (an array, an object without resourceType) is "not FHIR JSON".
  if (c.operation.operationId === 'importFhirRecord' && errors.every((e) => e.instancePath.startsWith('/requestBody'))) {
    return new DomainError('fhir_not_fhir', { reason: 'the body is not a FHIR resource with a resourceType (send a Bundle, a resource or NDJSON)' });
  }
  return validationError(errors, parameterExamples(c));
}

/** Refuses query parameters the operation does not know and values PostgreSQL could not compare. */
function refuseUnknownParameters(c: Context): void {
  const known = new Set([
    ...ALWAYS_ALLOWED_QUERY,
    ...((c.operation.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name),
  ]);
  const unknown = Object.keys((c.request.query as Record<string, unknown> | undefined) ?? {}).filter((name) => !known.has(name));
  const errors: FieldError[] = [
    ...unknown.map((name) => ({ pointer: `/query/${name}`, code: 'unknown_parameter', params: { name } })),
    ...unstorableParameters(c),
  ];
  if (errors.length > 0) throw new DomainError('invalid_parameter', {}, errors);
}

/** The API as the Koa app uses it. */
export interface Api {
  /** The operation a request is for; undefined when no operation takes its method and path. A path that cannot be decoded is refused (routes.ts). */
  operationOf(request: Request): Operation | undefined;
  /** Answers a request whose body (if any) the app has read: every refusal is thrown as a DomainError. */
  answer(ctx: KoaContext): Promise<void>;
}

/**
 * The API over openapi-backend's public parts: its router finds the operation (remembered per method and
 * path, routes.ts) and parses the request, its validator checks the request against the spec and coerces
 * the values, and each step of the request is one function here, in the order openapi-backend's own
 * handleRequest takes them: route, authenticate the key and admit the call (study, rate, right), validate,
 * refuse unknown parameters, call the operation's handler, write its reply.
 */
export async function createApi(services: Services): Promise<Api> {
  const backend = new OpenAPIBackend({
    definition: routedDocument(services.spec),
    strict: true,
    coerceTypes: true,
    // Compiles each operation's validators on its first call instead of all of them at start-up, where the
    // response validators (used only when VALIDATE_RESPONSES is on) were compiled twice over: without it a
    // service holds about 26 MB more from start-up on (issue 23.3, bench/README.md "Export memory"). It also
    // skips openapi-backend's check of the spec at start-up, which `make lint` (redocly) and `make gen-check` make.
    quick: true,
    // Defaults declared in the spec (record status, instance, …) reach the handlers filled in.
    // `verbose` keeps the refused value and its schema on each error, so the answer can name both (issue 19.5).
    ajvOpts: { allErrors: true, useDefaults: true, verbose: true },
    customizeAjv: (ajv) => addFormats(ajv),
  });
  await backend.init();
  const routeOf = rememberedRoutes(backend.router);
  const operationHandlers = handlers as unknown as Record<string, (c: Context, ctx: KoaContext) => Promise<AnyReply>>;

  /** Authenticates the request's key (a 401 is thrown) and admits its call, or throws the refusal. */
  async function admit(c: Context, ctx: KoaContext): Promise<void> {
    const request = await keyRequestOf(ctx);
    ctx.state.key = request.key;
    const call = { studyCode: String((c.request.params as Record<string, unknown>).study_code), right: OPERATION_RIGHTS[c.operation.operationId as OperationId] ?? 'any' };
    const { rate, study, refusal } = admissionOf(request, call, services.config.rateLimitPerMinute);
    ctx.set('RateLimit-Limit', String(rate.limit));
    ctx.set('RateLimit-Remaining', String(rate.remaining));
    ctx.set('RateLimit-Reset', String(rate.resetSeconds));
    if (refusal) throw refusal;
    ctx.state.study = study;
  }

  return {
    operationOf: (request) => routeOf(request)?.operation,
    async answer(ctx) {
      const request: Request = {
        method: ctx.method, path: ctx.path, headers: ctx.headers as Record<string, string>, query: ctx.query as Record<string, string>, body: ctx.request.body,
      };
      const route = routeOf(request);
      if (!route) throw routeRefusal(backend, request);
      const { operation } = route;
      // Node gives header names in lower case, as openapi-backend's parsing would; no API call reads cookies.
      const requestBody: unknown = ctx.request.body;
      const parsed: ParsedRequest<unknown> = { method: request.method, path: request.path, headers: request.headers, query: request.query, params: route.params, cookies: {}, requestBody };
      const c = { api: backend, operation, request: parsed } as Context;
      if (operation.security?.length) await admit(c, ctx);
      c.validation = backend.validateRequest(request, operation);
      if (c.validation.errors) throw validationRefusal(c);
      // The validator parsed the request once more and coerced its parameters: the handler gets those values.
      const coerced = c.validation.coerced as { params?: Record<string, unknown>; query?: Record<string, unknown> } | undefined;
      c.request = { ...parsed, params: coerced?.params ?? route.params, query: coerced?.query ?? request.query };
      refuseUnknownParameters(c);
      // Every operation of the contract has an operationId and its handler: `handlers` satisfies HandlerMap.
      const reply = await operationHandlers[operation.operationId!]!(c, ctx);
      if (services.config.validateResponses && reply.status !== 304 && !(reply.body instanceof StreamedBody)) {
        const body: unknown = reply.body instanceof SerializedJson ? JSON.parse(reply.body.text) : reply.body;
        const result = backend.validateResponse(body, operation, reply.status);
        if (result.errors) throw new Error(`response of ${operation.operationId} breaks the spec: ${JSON.stringify(result.errors)}`);
      }
      writeReply(reply, ctx);
    },
  };
}
