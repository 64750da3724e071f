import { OpenAPIBackend, type Context, type Document } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { admissionOf } from '../domain/apiKeys/admission.js';
import type { KeyRight } from '../domain/apiKeys/keyAccess.js';
import { DomainError, type FieldError } from '../domain/errors.js';
import { isStorableText } from '../domain/storableText.js';
import { handlers } from './index.js';
import { keyRequestOf } from './requestKey.js';
import { installRouterShortcuts } from './routerShortcuts.js';
import { SerializedJson } from './serializedJson.js';
import { StreamedBody } from './streamedBody.js';
import { validationError } from './validationErrors.js';
import type { Services } from './requestState.js';
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
  const locations = { query: c.request.query ?? {}, path: c.request.params ?? {} };
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

/**
 * The openapi-backend instance: routes by operationId, validates every request against the spec,
 * authenticates the key, checks the study, rate and rights, and writes every reply in one place.
 */
export async function createApi(services: Services): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend({
    definition: structuredClone(services.spec) as Document,
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

  api.registerSecurityHandler('ApiKey', async (_c: Context, ctx: KoaContext) => {
    try {
      ctx.state.key = (await keyRequestOf(ctx)).key;
      return ctx.state.key;
    } catch (error) {
      // openapi-backend treats any rejection as "unauthorized"; keep the error so a database fault is not reported as a bad key.
      return { error };
    }
  });

  api.register({
    unauthorizedHandler: (c: Context) => {
      throw (c.security as Record<string, { error?: unknown }>).ApiKey?.error ?? new DomainError('key_missing');
    },
    postSecurityHandler: async (c: Context, ctx: KoaContext) => {
      if (!c.security?.authorized || !ctx.state.key) return;
      const call = { studyCode: String(c.request.params.study_code), right: OPERATION_RIGHTS[c.operation.operationId as OperationId] ?? 'any' };
      const request = await keyRequestOf(ctx);
      const { rate, study, refusal } = admissionOf(request, call, services.config.rateLimitPerMinute);
      ctx.set('RateLimit-Limit', String(rate.limit));
      ctx.set('RateLimit-Remaining', String(rate.remaining));
      ctx.set('RateLimit-Reset', String(rate.resetSeconds));
      if (refusal) throw refusal;
      ctx.state.study = study;
    },
    validationFail: (c: Context) => {
      const records = (c.request.requestBody as { records?: unknown } | undefined)?.records;
      if (c.operation.operationId === 'submitFormRecords' && Array.isArray(records) && records.length > 500) {
        throw new DomainError('too_many_records', { max: 500, count: records.length });
      }
      const errors = (c.validation.errors ?? []) as ErrorObject[];
      // A FHIR body that is JSON but no resource (an array, an object without resourceType) is "not FHIR JSON".
      if (c.operation.operationId === 'importFhirRecord' && errors.every((e) => e.instancePath.startsWith('/requestBody'))) {
        throw new DomainError('fhir_not_fhir', { reason: 'the body is not a FHIR resource with a resourceType (send a Bundle, a resource or NDJSON)' });
      }
      throw validationError(errors, parameterExamples(c));
    },
    preOperationHandler: (c: Context) => {
      const known = new Set([
        ...ALWAYS_ALLOWED_QUERY,
        ...((c.operation.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name),
      ]);
      const unknown = Object.keys(c.request.query ?? {}).filter((name) => !known.has(name));
      const errors: FieldError[] = [
        ...unknown.map((name) => ({ pointer: `/query/${name}`, code: 'unknown_parameter', params: { name } })),
        ...unstorableParameters(c),
      ];
      if (errors.length > 0) throw new DomainError('invalid_parameter', {}, errors);
    },
    preRoutingHandler: (_c: Context, ctx: KoaContext) => {
      // openapi-backend decodes path parameters with decodeURIComponent, which throws on a broken escape (`%E0%A4%A`).
      try {
        decodeURIComponent(ctx.path);
      } catch {
        throw new DomainError('invalid_parameter', {}, [{ pointer: '/path', code: 'invalid_encoding' }]);
      }
    },
    notFound: () => {
      throw new DomainError('not_found');
    },
    methodNotAllowed: (_c: Context, ctx: KoaContext) => {
      throw new DomainError('method_not_allowed', { method: ctx.method });
    },
    postResponseHandler: (c: Context, ctx: KoaContext) => {
      const reply = c.response as { status: number; body: unknown; headers?: Record<string, string> };
      if (reply.body instanceof StreamedBody) {
        ctx.status = reply.status;
        for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
        ctx.type = reply.body.contentType;
        ctx.body = reply.body.stream();
        return;
      }
      if (services.config.validateResponses && reply.status !== 304) {
        const body = reply.body instanceof SerializedJson ? JSON.parse(reply.body.text) : reply.body;
        const result = c.api.validateResponse(body, c.operation, reply.status);
        if (result.errors) throw new Error(`response of ${c.operation.operationId} breaks the spec: ${JSON.stringify(result.errors)}`);
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
    },
  });
  api.register(handlers as unknown as Record<string, (c: Context, ctx: KoaContext) => unknown>);
  await api.init();
  installRouterShortcuts(api.router);
  return api;
}
