import type { ErrorObject } from 'ajv';
import { DomainError, type FieldError } from '../domain/errors.js';

const AJV_LOCATIONS: Record<string, string> = { requestBody: '', query: '/query', path: '/path', headers: '/header' };

/** A received value is echoed at most this long, so a huge or hostile value does not fill the answer. */
const RECEIVED_LENGTH = 60;

/** An example of each `format` the spec uses, for a value that does not have it (issue 19.5). */
const FORMAT_EXAMPLES: Record<string, string> = {
  date: '2026-03-01',
  'date-time': '2026-03-01T08:00:00Z',
  uri: 'https://fhir.example.org/fhir',
  'uri-reference': 'https://sdx.dev/problems/not_found',
};

/**
 * Writes `value` as JSON until about `budget.left` characters are out. A body may nest 100 000 levels
 * deep or hold megabytes: JSON.stringify of the whole would overflow the stack or waste the time, while
 * this stops within a few levels and characters of the budget.
 */
function writeJsonStart(value: unknown, out: string[], budget: { left: number }): void {
  const write = (text: string) => {
    out.push(text);
    budget.left -= text.length;
  };
  if (Array.isArray(value)) {
    write('[');
    for (let i = 0; i < value.length && budget.left > 0; i++) {
      if (i > 0) write(',');
      writeJsonStart(value[i], out, budget);
    }
    write(']');
  } else if (typeof value === 'object' && value !== null) {
    write('{');
    let first = true;
    for (const name in value) {
      if (budget.left <= 0) break;
      if (!Object.hasOwn(value, name)) continue;
      write(`${first ? '' : ','}${JSON.stringify(name.slice(0, RECEIVED_LENGTH * 2))}:`);
      first = false;
      writeJsonStart((value as Record<string, unknown>)[name], out, budget);
    }
    write('}');
  } else {
    write(JSON.stringify(typeof value === 'string' ? value.slice(0, RECEIVED_LENGTH * 2) : value) ?? 'null');
  }
}

/** A value as JSON text, cut to RECEIVED_LENGTH characters (whole code points) with an ellipsis. */
export function shortJson(value: unknown): string {
  const out: string[] = [];
  writeJsonStart(value, out, { left: RECEIVED_LENGTH });
  const text = [...out.join('')];
  return text.length <= RECEIVED_LENGTH ? text.join('') : `${text.slice(0, RECEIVED_LENGTH - 1).join('')}…`;
}

/** An allowed value as a client would write it: strings bare, anything else as JSON. */
function allowedText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The spec's example of the member (its schema's, else its parameter's), else one for its format. */
function exampleOf(error: ErrorObject, parameterExample: unknown): string | undefined {
  const schema = (error.parentSchema ?? {}) as { example?: unknown; examples?: unknown[] };
  const example = schema.example ?? schema.examples?.[0] ?? parameterExample
    ?? (error.keyword === 'format' ? FORMAT_EXAMPLES[String((error.params as { format: string }).format)] : undefined);
  return example === undefined ? undefined : allowedText(example);
}

/**
 * One refused member as a field error whose code is the JSON Schema keyword: the params name what
 * would have been accepted (`allowed`, `expected_format` with an `example`, a `limit`) and what came
 * (`received`, shortened), and become both the localized message and the entry's own members.
 */
function fieldErrorOf(error: ErrorObject, pointer: string, field: string, parameterExample: unknown): FieldError {
  const params = error.params as Record<string, unknown>;
  const data: unknown = error.data;
  const fieldAndValue = data === undefined ? { field } : { field, received: shortJson(data) };
  const example = exampleOf(error, parameterExample);
  const withExample = example === undefined ? {} : { example, variant: 'example' };
  switch (error.keyword) {
    case 'required':
      return { pointer, code: 'required', params: { field, variant: 'named' } };
    case 'enum':
      return { pointer, code: 'enum', params: { allowed: (params.allowedValues as unknown[]).map(allowedText), ...fieldAndValue } };
    case 'const':
      return { pointer, code: 'const', params: { allowed: [allowedText(params.allowedValue)], ...fieldAndValue } };
    case 'format':
      return { pointer, code: 'format', params: { expected_format: String(params.format), ...withExample, ...fieldAndValue } };
    case 'pattern':
      return { pointer, code: 'pattern', params: { pattern: params.pattern, ...withExample, ...fieldAndValue } };
    case 'type':
      return { pointer, code: 'type', params: { type: [params.type].flat().join(' | '), ...fieldAndValue } };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { pointer, code: error.keyword, params: { limit: params.limit, ...fieldAndValue } };
    case 'minLength':
    case 'maxLength':
      return { pointer, code: error.keyword, params: { limit: params.limit, count: [...String(data)].length, ...fieldAndValue } };
    case 'minItems':
    case 'maxItems':
      // The items themselves may be many and long: their number says what is wrong.
      return { pointer, code: error.keyword, params: { field, limit: params.limit, count: Array.isArray(data) ? data.length : 0 } };
    case 'additionalProperties': {
      const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      return { pointer, code: 'additionalProperties', params: { name: params.additionalProperty, allowed: known, ...(known.length ? {} : { variant: 'none' }) } };
    }
    case 'oneOf':
    case 'anyOf':
      return { pointer, code: error.keyword, params: fieldAndValue };
    default:
      // A keyword the spec does not use today: Ajv's English sentence, with the keyword and the value.
      return { pointer, code: 'schema', params: { keyword: error.keyword, message: error.message ?? 'invalid', variant: 'keyword', ...fieldAndValue } };
  }
}

const PARAMETER_LOCATIONS = new Set(['query', 'path', 'headers']);

/**
 * The refused member as a message names it: a parameter by its name, a body member by its path
 * (`records[3].values.sbp`), the body itself as `/`.
 */
function fieldName(isParameter: boolean, pointer: string): string {
  const segments = pointer.split('/').slice(1);
  if (isParameter) return segments.at(-1) ?? '/';
  const path = segments.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : `${i > 0 ? '.' : ''}${s}`)).join('');
  return path || '/';
}

/** Errors of the branches of a failed `oneOf`/`anyOf`: the failure of the whole says it, once. */
function withoutBranchErrors(errors: ErrorObject[]): ErrorObject[] {
  const alternatives = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf').map((e) => `${e.schemaPath}/`);
  return errors.filter((e) => !alternatives.some((prefix) => e.schemaPath.startsWith(prefix)));
}

/**
 * Turns request-validation errors into one domain error: `invalid_parameter` (400) when a parameter
 * is wrong, `invalid_body` (422) when only the body is. Pointers name the parameter (`/query/limit`)
 * or the body member (`/records/3/visit`).
 *
 * @param parameterExamples - the `example` of each parameter by its pointer (`/path/study_code`), for a
 *   parameter whose schema has none of its own
 */
export function validationError(errors: ErrorObject[], parameterExamples: Record<string, unknown> = {}): DomainError {
  const fieldErrors: FieldError[] = withoutBranchErrors(errors).map((error) => {
    const [, location = '', ...rest] = error.instancePath.split('/');
    const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty: string }).missingProperty}` : '';
    const extra = error.keyword === 'additionalProperties' ? `/${(error.params as { additionalProperty: string }).additionalProperty}` : '';
    const base = AJV_LOCATIONS[location] ?? `/${location}`;
    const pointer = `${base}${rest.length ? `/${rest.join('/')}` : ''}${missing}${extra}`;
    // The spec refuses unknown query parameters by name (code `unknown_parameter`), in the client's language.
    if (extra && location === 'query') return { pointer, code: 'unknown_parameter', params: { name: extra.slice(1) } };
    return fieldErrorOf(error, pointer, fieldName(PARAMETER_LOCATIONS.has(location), pointer), parameterExamples[pointer]);
  });
  const onlyBody = errors.every((e) => e.instancePath === '/requestBody' || e.instancePath.startsWith('/requestBody/'));
  return new DomainError(onlyBody ? 'invalid_body' : 'invalid_parameter', {}, fieldErrors);
}
