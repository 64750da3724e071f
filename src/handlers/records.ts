import { readPage } from '../domain/reads/readPage.js';
import { toRecordPageJson } from './presenters/readRows.js';
import { readRequestOf, poolStores } from './readRequest.js';
import { submitRecords } from '../domain/records/submitRecords.js';
import { inTransaction } from '../db/stores.js';
import { authenticated, keyActor, keyWriteAccess } from './authenticated.js';
import { answerOnce, asKept } from './idempotency.js';
import { toRecordsResultDto } from './presenters/recordResults.js';
import type { OperationHandler } from './types.js';

/** POST /studies/{study_code}/records: up to 500 form records, each with its own result. */
export const submitFormRecords: OperationHandler<'submitFormRecords'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const validateOnly = Boolean(c.request.query.validate_only);
  // A dry run changes nothing, so it keeps no Idempotency-Key: it answers anew each time.
  const request = validateOnly ? undefined : { operation: 'submitFormRecords' as const, input: c.request.requestBody };
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, request, async () => {
    const outcomes = await submitRecords(stores, keyActor(key), keyWriteAccess(key), study, c.request.requestBody.records, {
      validateOnly,
      source: 'api',
    });
    return { status: 200 as const, body: toRecordsResultDto(outcomes, ctx.state.lang) };
  }, asKept));
};

/** GET /studies/{study_code}/records: a page of saved forms, for full and incremental loads. */
export const listFormRecords: OperationHandler<'listFormRecords'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const stores = poolStores(services);
  const page = await readPage(stores, key, study, 'records', readRequestOf(c.request.query), services.readAhead.pages('records', (...args) => stores.reads.recordsPage(...args)));
  return { status: 200, body: toRecordPageJson(page) };
};
