import { readPage } from '../domain/reads/readPage.js';
import { authenticated } from './authenticated.js';
import { toAuditPageDto } from './presenters/auditRows.js';
import { readRequestOf, poolStores } from './readRequest.js';
import type { OperationHandler } from './types.js';

/** GET /studies/{study_code}/audit: a page of the audit trail of what the key may see, with its chain hashes. */
export const listAuditTrail: OperationHandler<'listAuditTrail'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const stores = poolStores(services);
  const page = await readPage(stores, key, study, 'audit', readRequestOf(c.request.query), services.readAhead.pages('audit', (...args) => stores.auditReads.auditPage(...args)));
  return { status: 200, body: toAuditPageDto(page) };
};
