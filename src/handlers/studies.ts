import { createStores } from '../db/stores.js';
import { authenticated } from './authenticated.js';
import { designAnswer } from './designAnswers.js';
import type { OperationHandler } from './types.js';

/** GET /studies/{study_code}: the design as the key may see it, with an ETag for cheap polling. */
export const getStudyDesign: OperationHandler<'getStudyDesign'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const sites = await createStores(services.db.knex).studies.sites(study);
  const { body, etag } = designAnswer(study, sites, key);
  const headers = { ETag: etag, 'Cache-Control': 'private, no-cache' };
  const ifNoneMatch = (c.request.headers as Record<string, string | string[] | undefined>)['if-none-match'];
  const presented = (Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (presented.includes(etag) || presented.includes('*')) return { status: 304, body: undefined, headers };
  return { status: 200, body, headers };
};
