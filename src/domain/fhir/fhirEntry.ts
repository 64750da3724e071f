/// <reference types="fhir" />
/**
 * One resource of an imported FHIR file together with where it sat in the file. References inside a
 * Bundle may point at an entry's `fullUrl` (Synthea writes only `urn:uuid:` references, and the Inferno
 * bundle's Patient has id `355` but fullUrl `urn:uuid:e919…`), so the fullUrl has to travel with the
 * resource from the parser to the identity check and the mapping.
 */

/** A resource of the file, its Bundle `fullUrl` if it had one, and its 0-based position in the file. */
export interface FhirEntry {
  resource: fhir4.Resource;
  fullUrl?: string;
  /** Position among the file's resources (Bundle entry index, or NDJSON resource number), from 0. */
  index: number;
}

/** What the identity check and the mapping accept: parsed entries, or bare resources (no fullUrls). */
export type FhirInput = readonly FhirEntry[] | readonly fhir4.Resource[];

/**
 * Normalises the input of the identity check and the mapping. Bare resources get their array position
 * as `index` and no fullUrl, so `urn:uuid:` references to them cannot be resolved: pass the entries of
 * `entriesOfJson` and `parseNdjsonEntries` whenever the file was a Bundle.
 */
export function toEntries(input: FhirInput): FhirEntry[] {
  return input.map((item, index) => (isEntry(item) ? item : { resource: item, index }));
}

function isEntry(item: FhirEntry | fhir4.Resource): item is FhirEntry {
  // A FHIR resource always has `resourceType`; our entry wrapper never does.
  return !('resourceType' in item);
}

/**
 * The reference an import item names its resource by (`Observation/bp-1`, as in the spec's example):
 * `<type>/<id>` when the resource has an id, else its fullUrl, else `<type>[<position>]` so that a
 * resource without either can still be found in the file.
 */
export function entryReference(entry: FhirEntry): string {
  const { resource } = entry;
  if (resource.id) return `${resource.resourceType}/${resource.id}`;
  if (entry.fullUrl) return entry.fullUrl;
  return `${resource.resourceType}[${entry.index}]`;
}
