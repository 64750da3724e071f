import type { ErrorObject } from 'ajv';
import { DomainError, type FieldError } from '../domain/errors.js';
import { translate, type Lang } from './messages/index.js';

/**
 * The only place that knows HTTP status: a stable error code maps to its status here, and to
 * its English and Russian text in `messages/`. Every refusal leaves the service as one RFC 9457
 * problem body (`application/problem+json`).
 */
const STATUS: Record<string, number> = {
  invalid_parameter: 400,
  invalid_after: 400,
  unauthorized: 401,
  key_missing: 401,
  key_malformed: 401,
  key_unknown: 401,
  key_revoked: 401,
  key_expired: 401,
  key_stopped: 401,
  right_missing: 403,
  api_disabled: 403,
  study_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  body_timeout: 408,
  subject_taken: 409,
  payload_too_large: 413,
  request_too_large: 431,
  malformed_request: 400,
  too_many_records: 413,
  unsupported_media_type: 415,
  invalid_body: 422,
  unknown_form_or_visit: 422,
  unknown_site: 422,
  unknown_subject: 422,
  consent_missing: 422,
  fhir_not_fhir: 422,
  fhir_other_patient: 422,
  fhir_two_patients: 422,
  fhir_identity_mismatch: 422,
  idempotency_key_reused: 422,
  study_locked: 423,
  enrolment_closed: 423,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  busy: 503,
  // Refusals of the staff portal's pages and forms (src/portal), shown as HTML pages with these statuses.
  sign_in_failed: 401,
  portal_forbidden: 403,
  csrf_failed: 403,
  portal_not_found: 404,
  not_a_manager: 403,
  export_right_missing: 403,
  invalid_key_name: 422,
  key_rights_missing: 422,
  invalid_key_term: 422,
  site_not_allowed: 422,
  key_sites_missing: 422,
  key_not_found: 404,
  key_already_revoked: 409,
  portal_bad_form: 400,
  import_nothing_chosen: 422,
  // Decisions on a FHIR import (src/domain/fhir/reviewImport.ts), taken on the review page.
  import_decision_not_allowed: 403,
  import_not_found: 404,
  import_already_decided: 409,
  invalid_import_choice: 422,
  import_outdated: 409,
  import_items_refused: 422,
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id: string;
  errors?: { pointer: string; code: string; message: string }[];
}

export interface ProblemReply {
  status: number;
  body: ProblemBody;
  headers: Record<string, string>;
}

export function statusOf(code: string): number {
  return STATUS[code] ?? 500;
}

/** Localizes one field error; `field.<code>` texts exist for codes shared by many places. */
export function fieldMessage(lang: Lang, error: FieldError): string {
  return translate(lang, `field.${error.code}`, error.params ?? {});
}

/** Turns a domain error into the problem reply the client sees. */
export function problemOf(error: DomainError, lang: Lang, requestId: string): ProblemReply {
  const status = statusOf(error.code);
  const params = { ...error.params, request_id: requestId };
  const body: ProblemBody = {
    type: `https://sdx.dev/problems/${error.code}`,
    title: translate(lang, `${error.code}.title`, params),
    status,
    // A code may have several details (e.g. why a key stopped): `params.variant` picks one.
    detail: translate(lang, `${error.code}.detail${error.params.variant ? `.${String(error.params.variant)}` : ''}`, params),
    code: error.code,
    request_id: requestId,
  };
  if (error.fieldErrors.length > 0) {
    body.errors = error.fieldErrors.map((e) => ({ pointer: e.pointer, code: e.code, message: fieldMessage(lang, e) }));
  }
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (status === 401) headers['www-authenticate'] = 'Bearer realm="sdx"';
  if (typeof error.params.retry_after === 'number') headers['retry-after'] = String(error.params.retry_after);
  return { status, body, headers };
}

const AJV_LOCATIONS: Record<string, string> = { requestBody: '', query: '/query', path: '/path', headers: '/headers' };

/**
 * Turns request-validation errors into one domain error: `invalid_parameter` (400) when a parameter
 * is wrong, `invalid_body` (422) when only the body is. Pointers name the parameter (`/query/limit`)
 * or the body member (`/records/3/visit`).
 */
export function validationError(errors: ErrorObject[]): DomainError {
  const fieldErrors: FieldError[] = errors.map((error) => {
    const [, location = '', ...rest] = error.instancePath.split('/');
    const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty: string }).missingProperty}` : '';
    const extra = error.keyword === 'additionalProperties' ? `/${(error.params as { additionalProperty: string }).additionalProperty}` : '';
    const base = AJV_LOCATIONS[location] ?? `/${location}`;
    const pointer = `${base}${rest.length ? `/${rest.join('/')}` : ''}${missing}${extra}`;
    // The spec refuses unknown query parameters by name (code `unknown_parameter`), in the client's language.
    if (extra && location === 'query') return { pointer, code: 'unknown_parameter', params: { name: extra.slice(1) } };
    return error.keyword === 'required'
      ? { pointer, code: 'required' }
      : { pointer, code: 'schema', params: { message: `${error.message ?? 'invalid'}${extra ? ` (${extra.slice(1)})` : ''}` } };
  });
  const onlyBody = errors.every((e) => e.instancePath === '/requestBody' || e.instancePath.startsWith('/requestBody/'));
  return new DomainError(onlyBody ? 'invalid_body' : 'invalid_parameter', {}, fieldErrors);
}
