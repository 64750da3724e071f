import { unwrap, type Schemas, type SdxClient } from './client.js';

export type FhirImport = Schemas['FhirImport'];

/**
 * Sends one patient's FHIR R4 record: a Bundle or a single resource as `application/fhir+json`
 * (`importFhirRecord`), or NDJSON text (one resource per line) as `application/fhir+ndjson`
 * (`importFhirNdjson`). Both make the same import.
 * `review` (the default) saves nothing and leaves the import for the site team at `review_url`;
 * `save` saves values that fill empty places and leaves changes to saved values for review.
 * Pass an `idempotencyKey` (see withIdempotentRetries) to make a retry safe.
 */
export async function sendFhirRecord(
  client: SdxClient,
  study: string,
  subject: string,
  record: Schemas['FhirResource'] | string,
  mode: Schemas['FhirImportMode'] = 'review',
  options: { idempotencyKey?: string } = {},
): Promise<FhirImport> {
  const params = { path: { study_code: study }, query: { subject, mode }, ...(options.idempotencyKey ? { header: { 'Idempotency-Key': options.idempotencyKey } } : {}) };
  if (typeof record !== 'string') {
    return unwrap(await client.POST('/api/v1/studies/{study_code}/fhir', { params, body: record, headers: { 'Content-Type': 'application/fhir+json' } }));
  }
  return unwrap(await client.POST('/api/v1/studies/{study_code}/fhir-ndjson', {
    params,
    body: record,
    headers: { 'Content-Type': 'application/fhir+ndjson' },
    // openapi-fetch would write a string as a JSON string; NDJSON goes as it is.
    bodySerializer: (body: unknown) => String(body),
  }));
}
