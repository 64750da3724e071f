import { entriesOfJson } from '../../src/domain/fhir/parseFhirBody.js';
import type { FhirEntry } from '../../src/domain/fhir/fhirEntry.js';

/** The entries of a FHIR JSON file, read as the service reads the body of `application/fhir+json`. */
export function fhirJsonEntries(body: Buffer | string): FhirEntry[] {
  return entriesOfJson(JSON.parse(body.toString()));
}
