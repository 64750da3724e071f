import { createStores, type AllStores } from '../db/stores.js';
import type { Services } from '../requestState.js';
import type { ReadRequest } from '../domain/reads/readPage.js';

/** The query parameters of a read call, as openapi-backend validated and coerced them. */
export function readRequestOf(query: {
  site?: string; subject?: string; visit?: string; form?: string; status?: string; updated_since?: string; limit?: number; after?: string;
}): ReadRequest {
  const { site, subject, visit, form, status } = query;
  const filters = Object.fromEntries(Object.entries({ site, subject, visit, form, status }).filter(([, v]) => v !== undefined));
  return { filters, updatedSince: query.updated_since, limit: query.limit ?? 500, after: query.after };
}

/**
 * Read-write stores on the pool itself, not bound to a transaction: what a read page runs on. Each of the page's statements
 * (watermark, page, removals, read log) then sees every transaction committed before it started,
 * whatever the server's default isolation, which is what the watermark needs; a snapshot taken
 * earlier would not. It also saves a page two round trips (BEGIN and COMMIT): the log row is one
 * statement, and a read changes nothing else.
 */
export function poolStores(services: Services): AllStores {
  return createStores(services.db.knex);
}
