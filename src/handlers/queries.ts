import { readPage } from '../domain/reads/readPage.js';
import { inTransaction } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import { toQueryPageDto } from './presenters/readRows.js';
import { READ_TRANSACTION, readRequestOf } from './readRequest.js';
import type { OperationHandler } from './types.js';

/** GET /studies/{study_code}/queries: a page of data queries on what the key may see. */
export const listQueries: OperationHandler<'listQueries'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const page = await inTransaction(services.db.knex, (stores) =>
    readPage(stores, key, study, 'queries', readRequestOf(c.request.query), (...args) => stores.reads.queriesPage(...args)), READ_TRANSACTION);
  return { status: 200, body: toQueryPageDto(page) };
};
