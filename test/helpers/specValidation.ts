import { OpenAPIBackend } from 'openapi-backend';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadSpec, routedDocument } from '../../src/handlers/spec.js';

const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

let backend: Promise<OpenAPIBackend> | undefined;
let problemValidator: ((body: unknown) => boolean) & { errors?: unknown } | undefined;

function specBackend(): Promise<OpenAPIBackend> {
  backend ??= (async () => {
    const api = new OpenAPIBackend({ definition: routedDocument(loadSpec()), strict: true, customizeAjv: (ajv) => addFormats(ajv) });
    await api.init();
    return api;
  })();
  return backend;
}

/** The spec's schemas under one Ajv (JSON Schema 2020-12, as OpenAPI 3.1 writes them). */
let schemaAjv: InstanceType<typeof Ajv2020> | undefined;
function specAjv(): InstanceType<typeof Ajv2020> {
  if (!schemaAjv) {
    const spec = loadSpec() as { components: { schemas: Record<string, unknown> } };
    schemaAjv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(schemaAjv);
    schemaAjv.addSchema({ $id: 'spec', components: spec.components });
  }
  return schemaAjv;
}

/** Fails when a webhook body does not match the body the spec's `webhooks` declare for its event type. */
export function assertWebhookMatchesSpec(body: { type: string }): void {
  const type = body.type;
  const webhooks = (loadSpec() as { webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }> }).webhooks;
  const declared = webhooks[type];
  if (!declared) throw new Error(`the spec declares no webhook ${type}`);
  const json = declared.post.requestBody.content['application/json'];
  if (!json) throw new Error(`the spec's webhook ${type} has no application/json body`);
  const validate = specAjv().compile({ $ref: `spec${json.schema.$ref}` });
  if (!validate(body)) throw new Error(`webhook ${type} breaks the spec: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`);
}

/** The Problem schema on its own: openapi-backend validates only `application/json` bodies. */
function validateProblem(body: unknown): string | undefined {
  problemValidator ??= specAjv().compile({ $ref: 'spec#/components/schemas/Problem' });
  return problemValidator(body) ? undefined : JSON.stringify(problemValidator.errors);
}

/**
 * Fails when a response does not match the spec: its status must be declared for the operation and
 * its body must match the declared schema. Every response the suite receives passes through here.
 */
export async function assertMatchesSpec(operationId: string | null, status: number, contentType: string, body: unknown): Promise<void> {
  if (operationId === null) {
    // No operation at that address (404 / 405): the answer must still be a well-formed problem.
    if (!contentType.startsWith('application/problem+json')) throw new Error(`an unrouted request answered ${status} with ${contentType}`);
    const problem = validateProblem(body);
    if (problem) throw new Error(`problem body breaks the spec: ${problem}`);
    return;
  }
  const api = await specBackend();
  const operation = api.getOperation(operationId);
  if (!operation) throw new Error(`no operation ${operationId} in the spec`);
  const declared = Object.keys(operation.responses ?? {});
  if (!declared.includes(String(status)) && !declared.includes('default')) {
    throw new Error(`${operationId} answered ${status}, which the spec does not declare (${declared.join(', ')})`);
  }
  if (status === 304) return;
  if (contentType.startsWith('application/problem+json')) {
    const problem = validateProblem(body);
    if (problem) throw new Error(`${operationId} ${status}: problem body breaks the spec: ${problem}\n${JSON.stringify(body)}`);
    return;
  }
  const mediaType = contentType.split(';')[0]?.trim() ?? '';
  if (mediaType !== 'application/json') {
    // A text answer (NDJSON, XML, the docs page): its media type must be declared; what it holds is checked
    // by the tests of that format with the format's own validator.
    const response = (operation.responses?.[String(status)] ?? {}) as { content?: Record<string, unknown> };
    if (!Object.keys(response.content ?? {}).includes(mediaType)) throw new Error(`${operationId} ${status}: media type ${mediaType} is not declared`);
    return;
  }
  const result = api.validateResponse(body, operation, status);
  if (result.errors) throw new Error(`${operationId} ${status}: body breaks the spec: ${JSON.stringify(result.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
}

/** The operationId the spec routes a request to, or null when no operation has that method and path. */
export async function operationOf(method: string, path: string): Promise<string | null> {
  const api = await specBackend();
  const operation = api.router.matchOperation({ method, path, headers: {} });
  return operation?.operationId ?? null;
}
