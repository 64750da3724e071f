import { importFhirRecord as importRecord } from '../domain/fhir/importFhirRecord.js';
import { importIdOf } from '../domain/fhir/importId.js';
import { getFhirImport as getImport, listFhirImports as listImports } from '../domain/fhir/importReads.js';
import { entriesOfJson, parseNdjsonEntries } from '../domain/fhir/parseFhirBody.js';
import { inTransaction } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import { answerOnce } from './idempotency.js';
import { reviewUrlOf, toFhirImportDto, toFhirImportPageDto } from './presenters/fhirImports.js';
import { readRequestOf, readStores } from './readRequest.js';
import type { OperationHandler } from './types.js';

/**
 * POST /studies/{study_code}/fhir: a patient's FHIR R4 record mapped into the eCRF. JSON bodies
 * arrive parsed (src/requestBody.ts), NDJSON bodies as text.
 */
export const importFhirRecord: OperationHandler<'importFhirRecord'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const body: unknown = c.request.requestBody;
  const entries = typeof body === 'string' ? parseNdjsonEntries(body) : entriesOfJson(body ?? '');
  const mode = c.request.query.mode ?? 'review';
  const subject = c.request.query.subject;
  const request = { operation: 'importFhirRecord' as const, input: { subject, mode, body } };
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, request, async () => {
    const result = await importRecord(stores, key, study, { subject, mode, entries });
    return {
      // 200: the same content already waited for review as this import (issue 19, point 6).
      status: result.repeated ? 200 as const : 201 as const,
      body: {
        import: importIdOf(study.code, result.subject, result.number),
        number: result.number,
        subject: result.subject,
        status: result.status,
        needs_review: result.status === 'proposed',
        mode: result.mode,
        counts: result.counts,
        review_url: reviewUrlOf(services.config.baseUrl, study.code, result.subject, result.number),
        items: result.items,
      },
    };
  }));
};

/** GET /studies/{study_code}/fhir: a page of the study's FHIR imports and their outcomes, without items. */
export const listFhirImports: OperationHandler<'listFhirImports'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const page = await listImports(readStores(services), key, study, readRequestOf(c.request.query));
  return { status: 200, body: toFhirImportPageDto(page, services.config.baseUrl, study.code) };
};

/** GET /studies/{study_code}/fhir/{import}: one FHIR import with its items and their outcomes. */
export const getFhirImport: OperationHandler<'getFhirImport'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const found = await getImport(readStores(services), key, study, c.request.params.import);
  return { status: 200, body: toFhirImportDto(found, services.config.baseUrl, study.code) };
};
