/// <reference types="fhir" />
/**
 * Resolving FHIR references (https://hl7.org/fhir/R4/references.html) within one imported file: to a
 * resource contained in the referring one (`#med0316`), to a Bundle entry by its fullUrl
 * (`urn:uuid:…`, as Synthea writes every reference), or by `<type>/<id>`, relative or absolute. An
 * absolute reference names an entry whose own fullUrl is absolute only on the same server: the same id
 * on another server is another resource (another patient's, for a Patient).
 */
import type { FhirEntry } from './fhirEntry.js';

/** The file's resources by fullUrl and by `<type>/<id>`. */
export type ResourceIndex = ReadonlyMap<string, FhirEntry>;

/** Indexes the entries under their fullUrl and their `<type>/<id>`. */
export function indexEntries(entries: readonly FhirEntry[]): ResourceIndex {
  const index = new Map<string, FhirEntry>();
  for (const entry of entries) {
    if (entry.fullUrl) index.set(entry.fullUrl, entry);
    if (entry.resource.id) {
      const key = `${entry.resource.resourceType}/${entry.resource.id}`;
      if (!index.has(key)) index.set(key, entry);
    }
  }
  return index;
}

/**
 * The `<type>/<id>` a literal reference names, without base URL or `_history` version, or null for a
 * reference that is not of that form (`urn:uuid:…`, `#contained`).
 */
export function typedId(reference: string): { type: string; id: string } | null {
  const path = reference.replace(/\/_history\/[\s\S]*$/, '').replace(/[?#].*$/, '');
  const match = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(path);
  // Both groups take part in every match: the fallbacks are for the type checker.
  return match ? { type: match[1] ?? '', id: match[2] ?? '' } : null;
}

/** What a literal reference points at inside the file, if anything. */
export type Resolved = { where: 'contained'; resource: fhir4.Resource } | { where: 'file'; entry: FhirEntry } | null;

/**
 * Resolves a literal reference made by `from`: `#id` among `from.contained`, else an entry whose
 * fullUrl is the reference (ignoring a `/_history/<version>`), else an entry with the same
 * `<type>/<id>` that the reference names (see `namesEntry`).
 */
export function resolveReference(index: ResourceIndex, reference: string, from: fhir4.Resource): Resolved {
  if (reference.startsWith('#')) {
    const id = reference.slice(1);
    const contained = (from as fhir4.DomainResource).contained?.find((r) => r.id === id);
    return contained ? { where: 'contained', resource: contained } : null;
  }
  const byUrl = index.get(reference) ?? index.get(withoutHistory(reference));
  if (byUrl) return { where: 'file', entry: byUrl };
  const parsed = typedId(reference);
  const byId = parsed ? index.get(`${parsed.type}/${parsed.id}`) : undefined;
  return byId && namesEntry(reference, byId) ? { where: 'file', entry: byId } : null;
}

/**
 * Whether a literal reference names the entry: by the entry's fullUrl, or by its `<type>/<id>`. An
 * absolute reference (`https://ehr.example/fhir/Patient/1`) names an entry with an absolute fullUrl
 * only when both are the same address once a `/_history/<version>` is left out; a relative reference,
 * or an entry without an absolute fullUrl, is matched by `<type>/<id>` alone.
 */
export function namesEntry(reference: string, entry: FhirEntry): boolean {
  if (entry.fullUrl && withoutHistory(entry.fullUrl) === withoutHistory(reference)) return true;
  const parsed = typedId(reference);
  if (!parsed || parsed.type !== entry.resource.resourceType || parsed.id !== entry.resource.id) return false;
  return !isAbsoluteUrl(reference) || !entry.fullUrl || !isAbsoluteUrl(entry.fullUrl);
}

/** Whether the reference or fullUrl is an http(s) address, as a server's resources have. */
export function isAbsoluteUrl(reference: string): boolean {
  return /^https?:\/\//i.test(reference);
}

/** The reference without a trailing `/_history/<version>`: every version of a resource names the resource. */
export function withoutHistory(reference: string): string {
  return reference.replace(/\/_history\/[^/]*$/, '');
}
