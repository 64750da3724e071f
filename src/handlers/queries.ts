import { readPage } from '../domain/reads/readPage.js';
import { answerQuery as answerQueryUseCase } from '../domain/queries/answerQuery.js';
import { closeQuery as closeQueryUseCase } from '../domain/queries/closeQuery.js';
import { openQuery as openQueryUseCase } from '../domain/queries/openQuery.js';
import { visibleQuery } from '../domain/queries/reachableQuery.js';
import { inTransaction, type AllStores } from '../db/stores.js';
import type { KeyContext } from '../domain/apiKeys/keyContext.js';
import type { Study } from '../domain/stores.js';
import { authenticated, keyActor, keyWriteAccess } from './authenticated.js';
import { answerOnce } from './idempotency.js';
import { toQueryDto, toQueryPageDto } from './presenters/readRows.js';
import { readRequestOf, poolStores } from './readRequest.js';
import type { OperationHandler } from './types.js';

/** A step's kept answer is replayed only while the key may still see its query (onceForKey); else 404 `query_not_found`. */
function queryStillSeen(stores: AllStores, key: KeyContext, study: Study) {
  return async <R extends { body: { id: number } }>(kept: R): Promise<R> => {
    await visibleQuery(stores, keyWriteAccess(key), study, kept.body.id);
    return kept;
  };
}

/** GET /studies/{study_code}/queries: a page of data queries on what the key may see. */
export const listQueries: OperationHandler<'listQueries'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const stores = poolStores(services);
  const page = await readPage(stores, key, study, 'queries', readRequestOf(c.request.query), services.readAhead.pages('queries', (...args) => stores.reads.queriesPage(...args)));
  return { status: 200, body: toQueryPageDto(page) };
};

/** POST /studies/{study_code}/queries: a manual query on a field, raised by the key. */
export const openQuery: OperationHandler<'openQuery'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, { operation: 'openQuery', input: c.request.requestBody }, async () =>
    ({ status: 201 as const, body: toQueryDto(await openQueryUseCase(stores, keyActor(key), keyWriteAccess(key), study, c.request.requestBody)) }), queryStillSeen(stores, key, study)));
};

/** POST /studies/{study_code}/queries/{query_id}/answers: an answer added to the query's thread. */
export const answerQuery: OperationHandler<'answerQuery'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const input = { queryId: c.request.params.query_id, text: c.request.requestBody.text };
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, { operation: 'answerQuery', input }, async () =>
    ({ status: 201 as const, body: toQueryDto(await answerQueryUseCase(stores, keyActor(key), keyWriteAccess(key), study, input)) }), queryStillSeen(stores, key, study)));
};

/** POST /studies/{study_code}/queries/{query_id}/close: the query closed with a reason. */
export const closeQuery: OperationHandler<'closeQuery'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const input = { queryId: c.request.params.query_id, reason: c.request.requestBody.reason };
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, { operation: 'closeQuery', input }, async () =>
    ({ status: 200 as const, body: toQueryDto(await closeQueryUseCase(stores, keyActor(key), keyWriteAccess(key), study, input)) }), queryStillSeen(stores, key, study)));
};
