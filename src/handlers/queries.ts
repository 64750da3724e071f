import { readPage } from '../domain/reads/readPage.js';
import { authenticated } from './authenticated.js';
import { toQueryPageDto } from './presenters/readRows.js';
import { readRequestOf, poolStores } from './readRequest.js';
import type { OperationHandler } from './types.js';

/** GET /studies/{study_code}/queries: a page of data queries on what the key may see. */
export const listQueries: OperationHandler<'listQueries'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const stores = poolStores(services);
  const page = await readPage(stores, key, study, 'queries', readRequestOf(c.request.query), services.readAhead.pages('queries', (...args) => stores.reads.queriesPage(...args)));
  return { status: 200, body: toQueryPageDto(page) };
};
