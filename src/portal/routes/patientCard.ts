import type Router from '@koa/router';
import { pathSegment } from '../pathSegment.js';
import { DomainError, isDomainError } from '../../domain/errors.js';
import { patientCard } from '../../domain/patients/patientCard.js';
import { recordConsent, type ConsentChange } from '../../domain/patients/recordConsent.js';
import { requirePatient, staffAccess, type StaffAccess } from '../../domain/people/staffAccess.js';
import { createStores, inTransaction } from '../../db/stores.js';
import { statusOf } from '../../errorStatus.js';
import type { Services } from '../../requestState.js';
import { formFields } from '../formBody.js';
import { errorDetail } from '../messages/index.js';
import type { PortalContext, PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { person, portalActor, signedIn } from '../signedIn.js';

/** The three changes the consent form offers, as the domain takes them. */
function consentChangeOf(form: Record<string, unknown>): ConsentChange {
  const date = typeof form.date === 'string' ? form.date.trim() : '';
  if (form.change === 'given') return { given: date };
  if (form.change === 'withdrawn' || form.change === 'withdrawn_data_use') return { withdrawn: date, dataUse: form.change === 'withdrawn_data_use' };
  throw new DomainError('portal_bad_form');
}

/**
 * A patient's card: site staff of the patient's site and managers (issue 7, point 3). They also record
 * consent on it (issue 19, point 2), through the same use case as `sdx patient consent`.
 */
export function patientCardRoutes(router: Router<PortalState>, services: Services): void {
  const knex = services.db.knex;
  const path = '/p/:study/s/:subject';

  async function showCard(ctx: PortalContext, access: StaffAccess, consentError: string | null = null, status = 200): Promise<void> {
    const card = await patientCard(createStores(knex), access, pathSegment(ctx.params.subject));
    renderPage(ctx, 'patientCard', { title: 'card.title', study: access.study, access, card, consentError, consentForm: consentError ? formFields(ctx) : {} }, status);
  }

  router.get(path, signedIn, async (ctx) => {
    await showCard(ctx, await staffAccess(createStores(knex), person(ctx).id, pathSegment(ctx.params.study)));
  });

  router.post(`${path}/consent`, signedIn, async (ctx) => {
    const access = await staffAccess(createStores(knex), person(ctx).id, pathSegment(ctx.params.study));
    const change = consentChangeOf(formFields(ctx));
    try {
      await inTransaction(knex, async (stores) => {
        // The person must reach the patient's site; recordConsent itself knows no portal roles.
        const patient = await requirePatient(stores.patients, access, pathSegment(ctx.params.subject));
        await recordConsent(stores, portalActor(ctx), { study: access.study.code, subject: patient.subject, change });
      });
    } catch (error) {
      // A wrong date or a withdrawal without consent comes back on the card, with the form as it was sent.
      if (!isDomainError(error) || statusOf(error.code) >= 500 || error.code === 'portal_forbidden') throw error;
      await showCard(ctx, access, errorDetail(ctx.state.lang, error.code, error.params), statusOf(error.code));
      return;
    }
    ctx.redirect(`/p/${encodeURIComponent(access.study.code)}/s/${encodeURIComponent(pathSegment(ctx.params.subject))}#consent`);
    ctx.status = 303;
  });
}
