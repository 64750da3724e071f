import type { ParameterizedContext } from 'koa';
import { koaBody } from 'koa-body';

/**
 * Form posts: URL-encoded only, at most 1 MB (a review of a large FHIR import has thousands of
 * choices), flat field names. Too many fields is an error rather than silently dropping the last
 * ones: a confirmation must never act on part of what the person chose.
 */
export const parseForm = koaBody({
  json: false,
  text: false,
  multipart: false,
  urlencoded: true,
  formLimit: '1mb',
  queryString: { parameterLimit: 20_000, throwOnLimitExceeded: true, allowDots: false, depth: 0 },
});

/** The fields of the posted form (none for a GET): a value is a string, or an array of strings for a repeated name. */
/** A form field as text: a field sent twice is its values joined with commas (as String() joins them), a missing one ''. */
export function fieldText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(fieldText).join(',');
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

export function formFields(ctx: ParameterizedContext): Record<string, unknown> {
  const body: unknown = ctx.request.body;
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}
