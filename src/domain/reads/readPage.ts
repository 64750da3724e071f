import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError, type FieldError } from '../errors.js';
import type { PageRequest, ReadFilters, ReadLogStore, ReadScope, ReadStore, RemovalRow, Study, StudyStore } from '../stores.js';
import { hiddenFormCodes, hiddenFormIds } from '../studies/designForKey.js';
import { decodeToken, encodeToken, filtersDigest } from './pagingToken.js';

export type ReadKind = 'patients' | 'records' | 'queries' | 'audit' | 'fhir_imports';

/** The filters as a client sends them: codes and numbers, not ids. */
export interface ReadRequest {
  filters: { site?: string; subject?: string; visit?: string; form?: string; status?: string };
  updatedSince?: string;
  limit: number;
  after?: string;
}

export interface Page<Row> {
  rows: Row[];
  next: string | null;
  watermark: string;
  removed: RemovalRow[];
}

type Stores = { studies: StudyStore; reads: ReadStore; readLog: ReadLogStore };

/** Site, visit and form filters become ids; one the key may not see is refused like one that does not exist. */
async function resolveFilters(studies: StudyStore, key: KeyContext, study: Study, request: ReadRequest): Promise<{ scope: ReadScope; filters: ReadFilters; updatedSince: string | null }> {
  const ids = await studies.designIds(study);
  const hiddenForms = hiddenFormCodes(study, key.makerUnblinded);
  const scope: ReadScope = { studyId: study.id, siteIds: key.siteIds, hiddenFormIds: hiddenFormIds(study, ids, key.makerUnblinded) };
  const errors: FieldError[] = [];
  const filters: ReadFilters = { subject: request.filters.subject, status: request.filters.status };
  const { site, visit, form } = request.filters;
  if (site !== undefined) {
    const found = (await studies.sites(study)).find((s) => s.number === site && key.siteIds.includes(s.id));
    if (found) filters.siteId = found.id;
    else errors.push({ pointer: '/query/site', code: 'unknown_filter_value', params: { name: 'site', value: site } });
  }
  if (visit !== undefined) {
    filters.visitId = ids.visits.get(visit);
    if (filters.visitId === undefined) errors.push({ pointer: '/query/visit', code: 'unknown_filter_value', params: { name: 'visit', value: visit } });
  }
  if (form !== undefined) {
    filters.formId = hiddenForms.has(form) ? undefined : ids.forms.get(form);
    if (filters.formId === undefined) errors.push({ pointer: '/query/form', code: 'unknown_filter_value', params: { name: 'form', value: form } });
  }
  const since = request.updatedSince === undefined ? undefined : instantOf(request.updatedSince);
  if (since === null) errors.push({ pointer: '/query/updated_since', code: 'instant_out_of_range' });
  if (errors.length > 0) throw new DomainError('invalid_parameter', {}, errors);
  return { scope, filters, updatedSince: since ?? null };
}

const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * `updated_since` as the UTC instant the database compares with, or null when the date-time the
 * schema let through (any offset, leap second) falls outside what PostgreSQL and JavaScript share.
 * Sub-millisecond digits are cut, which only widens the (inclusive) comparison.
 */
function instantOf(value: string): string | null {
  const time = Date.parse(value);
  return Number.isNaN(time) || time < FIRST_INSTANT || time > LAST_INSTANT ? null : new Date(time).toISOString();
}

/**
 * One page of a read call (interface description, "Read calls rules"): only the key's sites, no
 * unblinded-team forms for a blinded maker, no patient who withdrew consent to data use. Pages are
 * keyset-ordered by id, so a run never returns a row twice nor skips one that existed when it
 * started. The watermark, fixed on the first page, is what the next incremental load passes as
 * `updated_since`; removals since `updated_since` come with the first page. Every page is logged.
 */
export async function readPage<Row extends { id: number }>(
  stores: Stores,
  key: KeyContext,
  study: Study,
  kind: ReadKind,
  request: ReadRequest,
  fetch: (scope: ReadScope, filters: ReadFilters, page: PageRequest) => Promise<Row[]>,
): Promise<Page<Row>> {
  const { scope, filters, updatedSince } = await resolveFilters(stores.studies, key, study, request);
  const digest = filtersDigest([kind, key.keyId, request.filters, request.updatedSince ?? null]);
  // Read before the run's first query: a row version the run does not see was written by a transaction that
  // was open then (and the watermark is no later than its start) or began afterwards, so it is stamped at
  // or after the watermark and the next load, from the watermark, gets it.
  const position = request.after
    ? decodeToken(request.after, digest)
    : { afterId: 0, watermark: (await stores.reads.watermark()).toISOString() };
  const fetched = await fetch(scope, filters, { afterId: position.afterId, limit: request.limit + 1, updatedSince, watermark: position.watermark });
  const rows = fetched.slice(0, request.limit);
  const more = fetched.length > request.limit;
  const last = rows.at(-1);
  const removed = !request.after && updatedSince ? await stores.reads.removals(scope, filters, updatedSince) : [];
  await stores.readLog.logRead({
    keyId: key.keyId,
    studyId: study.id,
    operation: kind,
    filters: { ...request.filters, ...(request.updatedSince ? { updated_since: request.updatedSince } : {}), limit: request.limit, ...(request.after ? { after: true } : {}) },
    rows: rows.length,
  });
  return {
    rows,
    next: more && last ? encodeToken({ afterId: last.id, watermark: position.watermark }, digest) : null,
    watermark: position.watermark,
    removed,
  };
}
