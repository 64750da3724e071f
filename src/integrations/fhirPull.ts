import { Client, type FhirResource } from 'fhir-kit-client';
import type { components } from '../../generated/openapi.js';

/**
 * The FHIR pull (`sdx fhir push --from …`): fetch one patient's record from a hospital's FHIR R4 server
 * with fhir-kit-client and send it to a study's `importFhirRecord` call with an API key, exactly as a
 * hospital system would. It is a client of both servers and holds no rule of its own: the mapping, the
 * identity checks and the consent gate all run in the service on the Bundle it receives.
 */

type FhirImport = components['schemas']['FhirImport'];
type Problem = components['schemas']['Problem'];
type Resource = FhirResource & { resourceType: string; id?: string };
type Bundle = Resource & { entry?: { fullUrl?: string; resource?: Resource }[]; link?: { relation: string; url: string }[] };

/**
 * What the study's FHIR mapping reads (observations, conditions, medications, and the Medication a
 * medication order points at), plus the Patient for the identity check. Nothing else of the record
 * (encounters, claims, notes…) leaves the hospital: it would not be mapped, so it is not sent.
 */
const SENT_TYPES = ['Patient', 'Observation', 'Condition', 'MedicationStatement', 'MedicationRequest', 'Medication'] as const;
/** The searches of the fallback when the server has no `Patient/$everything`. */
const SEARCHED_TYPES = ['Observation', 'Condition', 'MedicationStatement', 'MedicationRequest'] as const;
/** The import call's body limit (interface description, "Limits"). */
const BODY_LIMIT = 5 * 1024 * 1024;
/** Answers of a server that does not offer `$everything` (unknown operation, not implemented). */
const NOT_SUPPORTED = new Set([400, 404, 405, 501]);

/** A pull or push that could not be done; `code` is stable, `message` says what to do. */
export class FhirPullError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'FhirPullError';
  }
}

export interface PulledRecord {
  /** A `collection` Bundle: the Patient first, then every other resource sent, each once. */
  bundle: Bundle;
  /** `everything` when `Patient/$everything` answered, `search` when the per-type searches were used. */
  via: 'everything' | 'search';
  /** FHIR pages read, following `link[relation=next]`. */
  pages: number;
  /** Resources in the Bundle, by type. */
  resources: Record<string, number>;
}

const status = (error: unknown): number | undefined => (error as { response?: { status?: number } }).response?.status;

function hospitalError(error: unknown, what: string): FhirPullError {
  if (error instanceof FhirPullError) return error;
  const code = status(error);
  return new FhirPullError('fhir_server_error', `The FHIR server answered ${code ?? (error as Error).message} to ${what}.`, { status: code });
}

/**
 * The next page's address, when the server gives one that may be followed. The hospital's server is
 * trusted with the patient's record, not with where this machine sends requests (OWASP API10): a link
 * that is not an absolute http(s) URL under the base address the operator named is refused, as is a page
 * already read, since a server that pages in a circle would never let the pull end. The URL as checked
 * is what is fetched: fhir-kit-client requests any string starting with "http" as it stands, so the raw
 * `http:other-host/…` (which WHATWG URL reads as a path under the base) would reach another host.
 */
function nextPageUrl(page: Bundle, base: string, read: Set<string>): string | undefined {
  const next = page.link?.find((l) => l.relation === 'next')?.url;
  if (!next) return undefined;
  const root = new URL(`${base}/`);
  const url = URL.canParse(next) ? new URL(next) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || url.origin !== root.origin || !url.pathname.startsWith(root.pathname)) {
    throw new FhirPullError('fhir_paging_refused', `The FHIR server's next page is not an address under ${base}; it is not followed.`, { next: url ? `${url.origin}${url.pathname}` : next });
  }
  if (read.has(url.href)) throw new FhirPullError('fhir_paging_refused', `The FHIR server's paging leads back to a page already read (${url.pathname}).`);
  read.add(url.href);
  return url.href;
}

/** Every resource of a search or operation, page after page. */
async function allPages(client: Client, first: Bundle, count: { pages: number }): Promise<Resource[]> {
  const resources: Resource[] = [];
  const read = new Set<string>();
  for (let page: Bundle | undefined = first; page; ) {
    count.pages += 1;
    for (const entry of page.entry ?? []) if (entry.resource) resources.push(entry.resource);
    const next = nextPageUrl(page, client.baseUrl, read);
    page = next ? await client.nextPage({ bundle: { ...page, link: [{ relation: 'next', url: next }] } }) : undefined;
  }
  return resources;
}

/**
 * Fetches the record of patient `patientId` from the FHIR R4 server at `from`: `Patient/<id>/$everything`,
 * or, when the server does not offer it, the Patient and searches of Observation, Condition,
 * MedicationStatement and MedicationRequest by patient. Every paging link is followed. A Medication a
 * medication order points at and that did not come along is read on its own.
 */
export async function pullPatientRecord(from: string, patientId: string, options: { bearerToken?: string } = {}): Promise<PulledRecord> {
  const client = new Client({ baseUrl: from.replace(/\/+$/, ''), ...(options.bearerToken ? { bearerToken: options.bearerToken } : {}) });
  const count = { pages: 0 };
  let patient: Resource;
  try {
    patient = await client.read({ resourceType: 'Patient', id: patientId });
  } catch (error) {
    if (status(error) === 404 || status(error) === 410) throw new FhirPullError('fhir_patient_not_found', `The FHIR server has no Patient/${patientId}.`, { patient: patientId });
    throw hospitalError(error, `Patient/${patientId}`);
  }

  let via: PulledRecord['via'] = 'everything';
  let found: Resource[];
  try {
    const first = (await client.operation({ name: '$everything', resourceType: 'Patient', id: patientId, method: 'GET' })) as Bundle;
    found = await allPages(client, first, count);
  } catch (error) {
    if (!NOT_SUPPORTED.has(status(error) ?? 0)) throw hospitalError(error, `Patient/${patientId}/$everything`);
    via = 'search';
    found = [];
    for (const resourceType of SEARCHED_TYPES) {
      try {
        const first = (await client.search({ resourceType, searchParams: { patient: patientId } })) as Bundle;
        found.push(...(await allPages(client, first, count)));
      } catch (searchError) {
        throw hospitalError(searchError, `${resourceType}?patient=${patientId}`);
      }
    }
  }

  const kept = new Map<string, Resource>([[`Patient/${patient.id}`, patient]]);
  for (const resource of found) {
    if ((SENT_TYPES as readonly string[]).includes(resource.resourceType) && resource.id && !(resource.resourceType === 'Patient' && resource.id !== patient.id)) {
      kept.set(`${resource.resourceType}/${resource.id}`, resource);
    }
  }
  for (const reference of medicationReferences([...kept.values()])) {
    if (kept.has(reference)) continue;
    try {
      kept.set(reference, await client.read({ resourceType: 'Medication', id: reference.slice('Medication/'.length) }));
    } catch (error) {
      // An order whose Medication cannot be read still carries its own dates; the service reports it unmapped.
      if (status(error) !== 404 && status(error) !== 410) throw hospitalError(error, reference);
    }
  }

  const base = client.baseUrl;
  const bundle: Bundle = {
    resourceType: 'Bundle',
    type: 'collection',
    entry: [...kept.values()].map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource })),
  };
  const resources: Record<string, number> = {};
  for (const resource of kept.values()) resources[resource.resourceType] = (resources[resource.resourceType] ?? 0) + 1;
  return { bundle, via, pages: count.pages, resources };
}

/** `Medication/<id>` references of medication orders and statements (contained ones need nothing). */
function medicationReferences(resources: Resource[]): string[] {
  return resources
    .map((r) => (r.medicationReference as { reference?: string } | undefined)?.reference)
    .filter((ref): ref is string => typeof ref === 'string' && /^Medication\/[^/]+$/.test(ref));
}

/**
 * Sends a pulled record to the study's FHIR call (`POST /api/v1/studies/<study>/fhir`) with the API key.
 * A refusal becomes a FhirPullError with the service's problem code (`consent_missing`,
 * `fhir_identity_mismatch`, `key_revoked`…).
 */
export async function pushToStudy(input: { api: string; key: string; study: string; subject: string; mode: 'review' | 'save'; bundle: Bundle }): Promise<FhirImport> {
  const body = JSON.stringify(input.bundle);
  if (Buffer.byteLength(body) > BODY_LIMIT) {
    throw new FhirPullError('fhir_record_too_large', `The record is ${(Buffer.byteLength(body) / 1024 / 1024).toFixed(1)} MB; the service takes up to 5 MB in one call.`);
  }
  const url = new URL(`/api/v1/studies/${encodeURIComponent(input.study)}/fhir`, input.api);
  url.searchParams.set('subject', input.subject);
  url.searchParams.set('mode', input.mode);
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${input.key}`, 'content-type': 'application/fhir+json' }, body });
  } catch (error) {
    throw new FhirPullError('sdx_unreachable', `The sdx service at ${input.api} cannot be reached: ${(error as Error).message}`);
  }
  const text = await response.text();
  let answer: FhirImport | Problem | undefined;
  try {
    answer = text ? (JSON.parse(text) as FhirImport | Problem) : undefined;
  } catch {
    // Not the service's JSON (a proxy's error page, say): reported by its status below.
  }
  if (response.status === 201 && answer) return answer as FhirImport;
  const problem = answer && 'code' in answer ? answer : undefined;
  throw new FhirPullError(problem?.code ?? 'sdx_refused', problem?.detail ?? `The sdx service answered ${response.status}.`, { status: response.status });
}
