import { readPage } from '../domain/reads/readPage.js';
import { toRecordPageDto } from './presenters/readRows.js';
import { READ_TRANSACTION, readRequestOf } from './readRequest.js';
import { submitRecords } from '../domain/records/submitRecords.js';
import { inTransaction } from '../db/stores.js';
import { authenticated, keyActor } from './authenticated.js';
import { toRecordsResultDto } from './presenters/recordResults.js';
import type { OperationHandler } from './types.js';

/** POST /studies/{study_code}/records: up to 500 form records, each with its own result. */
export const submitFormRecords: OperationHandler<'submitFormRecords'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const outcomes = await inTransaction(services.db.knex, (stores) =>
    submitRecords(stores, keyActor(key), { siteIds: key.siteIds, unblinded: key.makerUnblinded }, study, c.request.requestBody.records, {
      validateOnly: Boolean(c.request.query.validate_only),
      source: 'api',
    }),
  );
  return { status: 200, body: toRecordsResultDto(outcomes, ctx.state.lang) };
};

/** GET /studies/{study_code}/records: a page of saved forms, for full and incremental loads. */
export const listFormRecords: OperationHandler<'listFormRecords'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const page = await inTransaction(services.db.knex, (stores) =>
    readPage(stores, key, study, 'records', readRequestOf(c.request.query), (...args) => stores.reads.recordsPage(...args)), READ_TRANSACTION);
  return { status: 200, body: toRecordPageDto(page) };
};
