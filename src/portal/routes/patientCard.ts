import type Router from '@koa/router';
import { patientCard } from '../../domain/patients/patientCard.js';
import { staffAccess } from '../../domain/people/staffAccess.js';
import { createStores } from '../../db/stores.js';
import type { Services } from '../../handlers/requestState.js';
import type { PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { person, signedIn } from '../signedIn.js';

/** A patient's card: site staff of the patient's site and managers (issue 7, point 3). */
export function patientCardRoutes(router: Router<PortalState>, services: Services): void {
  router.get('/p/:study/s/:subject', signedIn, async (ctx) => {
    const stores = createStores(services.db.knex);
    const access = await staffAccess(stores, person(ctx).id, ctx.params.study);
    const card = await patientCard(stores, access, ctx.params.subject);
    renderPage(ctx, 'patientCard', { title: 'card.title', study: access.study, access, card });
  });
}
