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
 * Read calls run read committed whatever the server's default: the page's query must see every
 * transaction that committed before the watermark was read, which a snapshot taken earlier would not.
 */
export const READ_TRANSACTION = { isolationLevel: 'read committed' } as const;
