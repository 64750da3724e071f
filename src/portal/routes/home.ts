import type Router from '@koa/router';
import { pathSegment } from '../pathSegment.js';
import { PATIENTS_PER_PAGE, sitePatients } from '../../domain/patients/sitePatients.js';
import { staffAccess } from '../../domain/people/staffAccess.js';
import { staffStudies } from '../../domain/people/staffStudies.js';
import { createStores } from '../../db/stores.js';
import type { Services } from '../../requestState.js';
import type { PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { person, signedIn } from '../signedIn.js';

/** A query parameter as one text: a repeated one counts as absent. */
const queryText = (value: string | string[] | undefined): string | undefined => (typeof value === 'string' ? value : undefined);

/** The start page (the person's studies) and a study's page (the patients of the person's sites). */
export function homeRoutes(router: Router<PortalState>, services: Services): void {
  router.get('/portal', signedIn, async (ctx) => {
    const studies = await staffStudies(createStores(services.db.knex), person(ctx).id);
    renderPage(ctx, 'home', { title: 'home.title', studies });
  });

  router.get('/p/:study', signedIn, async (ctx) => {
    const stores = createStores(services.db.knex);
    const access = await staffAccess(stores, person(ctx).id, pathSegment(ctx.params.study));
    const sites = (await stores.studies.sites(access.study)).filter((s) => access.siteIds.includes(s.id));
    const list = await sitePatients(stores, access, { search: queryText(ctx.query.q), after: queryText(ctx.query.after) });
    renderPage(ctx, 'study', { title: 'study.title', study: access.study, access, sites, ...list, after: queryText(ctx.query.after) ?? '', perPage: PATIENTS_PER_PAGE });
  });
}
