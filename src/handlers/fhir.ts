import { importFhirRecord as importRecord } from '../domain/fhir/importFhirRecord.js';
import { entriesOfJson, parseNdjsonEntries } from '../domain/fhir/parseFhirBody.js';
import { inTransaction } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import { answerOnce } from './idempotency.js';
import { itemsWithPlacement } from './presenters/fhirImportItems.js';
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
        import: `${study.code}-${result.subject}-${result.number}`,
        number: result.number,
        subject: result.subject,
        status: result.status,
        needs_review: result.status === 'proposed',
        mode: result.mode,
        counts: result.counts,
        review_url: `${services.config.baseUrl}/p/${encodeURIComponent(study.code)}/s/${encodeURIComponent(result.subject)}/fhir/${result.number}`,
        items: itemsWithPlacement(result.items, result.placements, study.design, ctx.state.lang),
      },
    };
  }));
};
