/// <reference types="fhir" />
/**
 * Reads the body of the FHIR import call (`importFhirRecord`): a Bundle of any type, a single resource,
 * or NDJSON with one resource per line. Only the shape is checked here (JSON, objects with a
 * `resourceType`, Bundle entries with a resource); `validateR4.ts` checks the content against FHIR R4.
 */
import { DomainError } from '../errors.js';
import type { FhirEntry } from './fhirEntry.js';

const RESOURCE_TYPE = /^[A-Z][A-Za-z]+$/;

/**
 * Parses an NDJSON body (`application/fhir+ndjson`) into its entries: one resource per non-empty line, a
 * Bundle on a line counting as its entries (each keeps its `fullUrl`, which the identity check and the
 * mapping need to resolve `urn:uuid:` references). A FHIR JSON body arrives parsed by the HTTP layer and
 * goes through {@link entriesOfJson}.
 *
 * @throws DomainError `fhir_not_fhir` with `params.reason`, a short English sentence naming the line or
 *   entry at fault: the body is empty, a line is not JSON, is a JSON array or other non-object, has no
 *   `resourceType`, or holds a Bundle entry without a resource.
 */
export function parseNdjsonEntries(body: string): FhirEntry[] {
  // A UTF-8 byte order mark is legal at the start of a text sent by some Windows tools.
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  const entries: FhirEntry[] = [];
  const lines = text.split('\n');
  let sawLine = false;
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '') continue;
    sawLine = true;
    const where = `line ${i + 1}`;
    collect(parseJson(line, where), where, entries);
  }
  if (!sawLine) throw notFhir('the body is empty');
  return entries;
}

/** The entries of a body that the HTTP layer already parsed as JSON (`application/fhir+json`). */
export function entriesOfJson(value: unknown): FhirEntry[] {
  const entries: FhirEntry[] = [];
  collect(value, 'the body', entries);
  return entries;
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw notFhir(`${where} is not valid JSON (${(error as Error).message})`);
  }
}

/** Adds the resource(s) of one JSON value (the body, or one NDJSON line) to `out`. */
function collect(value: unknown, where: string, out: FhirEntry[]): void {
  const resource = asResource(value, where);
  if (resource.resourceType !== 'Bundle') {
    out.push({ resource, index: out.length });
    return;
  }
  const entry: unknown = (resource as { entry?: unknown }).entry;
  if (entry === undefined) return;
  if (!Array.isArray(entry)) throw notFhir(`${where}: Bundle.entry is not an array`);
  entry.forEach((item: unknown, i: number) => {
    const at = `${where}: Bundle entry ${i}`;
    if (!isObject(item)) throw notFhir(`${at} is not an object`);
    if (item.resource === undefined) throw notFhir(`${at} has no resource`);
    const fullUrl = typeof item.fullUrl === 'string' && item.fullUrl !== '' ? item.fullUrl : undefined;
    out.push({ resource: asResource(item.resource, at), ...(fullUrl ? { fullUrl } : {}), index: out.length });
  });
}

function asResource(value: unknown, where: string): fhir4.Resource {
  if (Array.isArray(value)) throw notFhir(`${where} is a JSON array, not a FHIR resource (send a Bundle or NDJSON)`);
  if (!isObject(value)) throw notFhir(`${where} is not a JSON object`);
  const type = value.resourceType;
  if (typeof type !== 'string' || !RESOURCE_TYPE.test(type)) throw notFhir(`${where} has no resourceType`);
  return value as unknown as fhir4.Resource;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function notFhir(reason: string): DomainError {
  return new DomainError('fhir_not_fhir', { reason });
}
