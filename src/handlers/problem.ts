import type { components } from '../../generated/openapi.js';
import type { DomainError, FieldError } from '../domain/errors.js';
import { statusOf } from '../errorStatus.js';
import { detailOf, paramText, translate, type Lang } from '../messages/index.js';

const PROBLEM_CONTENT_TYPE = 'application/problem+json';

type ProblemBody = components['schemas']['Problem'];
type ProblemError = components['schemas']['ProblemError'];

export interface ProblemReply {
  status: number;
  body: ProblemBody;
  headers: Record<string, string>;
}

/** Localizes one field error; `field.<code>` texts exist for codes shared by many places, `params.variant` picks a wording. */
export function fieldMessage(lang: Lang, error: FieldError): string {
  const variant = error.params?.variant;
  return translate(lang, `field.${error.code}${variant ? `.${paramText(variant)}` : ''}`, error.params ?? {});
}

/**
 * The `errors[]` entry of a field error. What would have been accepted and what was received also
 * come as members of their own (spec, ProblemError), so a program can show them without parsing text.
 */
function problemErrorOf(lang: Lang, error: FieldError): ProblemError {
  const entry: ProblemError = { pointer: error.pointer, code: error.code, message: fieldMessage(lang, error) };
  const { allowed, expected_format: expectedFormat, example, received } = error.params ?? {};
  if (Array.isArray(allowed)) entry.allowed = allowed.map(String);
  if (typeof expectedFormat === 'string') entry.expected_format = expectedFormat;
  if (typeof example === 'string') entry.example = example;
  if (typeof received === 'string') entry.received = received;
  return entry;
}

/** Turns a domain error into the problem reply the client sees. */
export function problemOf(error: DomainError, lang: Lang, requestId: string): ProblemReply {
  const status = statusOf(error.code);
  const params = { ...error.params, request_id: requestId };
  const body: ProblemBody = {
    type: `https://sdx.dev/problems/${error.code}`,
    title: translate(lang, `${error.code}.title`, params),
    status,
    detail: detailOf(lang, error.code, params),
    code: error.code,
    request_id: requestId,
  };
  if (error.fieldErrors.length > 0) {
    body.errors = error.fieldErrors.map((e) => problemErrorOf(lang, e));
  }
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (status === 401) headers['www-authenticate'] = 'Bearer realm="sdx"';
  if (typeof error.params.retry_after === 'number') headers['retry-after'] = String(error.params.retry_after);
  return { status, body, headers };
}
