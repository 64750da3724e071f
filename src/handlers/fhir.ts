import { importFhirRecord as importRecord } from '../domain/fhir/importFhirRecord.js';
import { importIdOf } from '../domain/fhir/importId.js';
import { importAsSeenNow } from '../domain/fhir/importReplay.js';
import { getFhirImport as getImport, listFhirImports as listImports } from '../domain/fhir/importReads.js';
import { entriesOfJson, parseNdjsonEntries } from '../domain/fhir/parseFhirBody.js';
import { inTransaction } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import { answerOnce } from './idempotency.js';
import { itemsWithPlacement } from './presenters/fhirImportItems.js';
import { reviewUrlOf, toFhirImportDto, toFhirImportPageDto } from './presenters/fhirImports.js';
import { readRequestOf, poolStores } from './readRequest.js';
import type { KoaContext, OperationHandler } from './types.js';

type FhirImportCall = Parameters<OperationHandler<'importFhirRecord'>>[0] | Parameters<OperationHandler<'importFhirNdjson'>>[0];

/**
 * Both FHIR calls make one import through the same use case. JSON bodies arrive parsed
 * (src/requestBody.ts), NDJSON bodies as text. Their idempotency scope is one ('importFhirRecord'),
 * so a key retried on the other path is the same request, not a second import.
 */
async function importFhir(c: FhirImportCall, ctx: KoaContext) {
  const { key, study, services } = authenticated(ctx);
  const body: unknown = c.request.requestBody;
  // NDJSON comes as text, or parsed when it is one line of JSON (openapi-backend tries JSON on text); no body is empty text.
  const entries = typeof body === 'object' && body !== null ? entriesOfJson(body) : parseNdjsonEntries(typeof body === 'string' ? body : '');
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
        items: itemsWithPlacement(result.items, result.placements, study.design, ctx.state.lang),
      },
    };
  }, async (kept) => ({ ...kept, body: await importAsSeenNow(stores.patients, key, study, kept.body) })));
}

/** POST /studies/{study_code}/fhir: FHIR JSON, and NDJSON as before the NDJSON call existed (the spec's `x-also-accepts`). */
export const importFhirRecord: OperationHandler<'importFhirRecord'> = importFhir;

/** POST /studies/{study_code}/fhir-ndjson: the same import, declared for NDJSON only. */
export const importFhirNdjson: OperationHandler<'importFhirNdjson'> = importFhir;

/** GET /studies/{study_code}/fhir: a page of the study's FHIR imports and their outcomes, without items. */
export const listFhirImports: OperationHandler<'listFhirImports'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const page = await listImports(poolStores(services), key, study, readRequestOf(c.request.query));
  return { status: 200, body: toFhirImportPageDto(page, services.config.baseUrl, study.code) };
};

/** GET /studies/{study_code}/fhir/{import_id}: one FHIR import with its items and their outcomes. */
export const getFhirImport: OperationHandler<'getFhirImport'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const found = await getImport(poolStores(services), key, study, c.request.params.import_id);
  const items = itemsWithPlacement(found.items, found.placements, study.design, ctx.state.lang);
  return { status: 200, body: toFhirImportDto({ ...found, items }, services.config.baseUrl, study.code) };
};
