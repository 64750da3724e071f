import type Router from '@koa/router';
import { pathSegment } from '../pathSegment.js';
import { DomainError } from '../../domain/errors.js';
import { confirmImport, rejectImport, type ItemChoice } from '../../domain/fhir/importDecision.js';
import { importReview, type ImportReview } from '../../domain/patients/fhirReviewPage.js';
import { staffAccess, type StaffAccess } from '../../domain/people/staffAccess.js';
import { createStores, inTransaction } from '../../db/stores.js';
import { isRefusal, statusOf } from '../../errorStatus.js';
import type { Services } from '../../requestState.js';
import { formFields } from '../formBody.js';
import { errorDetail } from '../messages/index.js';
import { pathNumber } from '../pathNumber.js';
import type { PortalContext, PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { person, signedIn } from '../signedIn.js';

/** What the person decided on the page: the button pressed, and what it means item by item. */
type Decision = 'confirm_chosen' | 'confirm_all' | 'reject';

/**
 * The choices a confirmation sends, built from the items on the page, never from positions the form
 * names: an item the person could not see or that is not pending cannot be chosen by a crafted post.
 * A new item is taken when ticked (always with "confirm all"); a table row has one tick, on its first
 * new cell, and `confirmImport` takes the row's other new cells with it. A conflict keeps the saved value
 * unless "replace" is chosen for it, so a saved value changes only by an explicit choice; a tie is saved
 * only with a candidate picked for it, also under "confirm all".
 */
function choicesOf(review: ImportReview, decision: Decision, form: Record<string, unknown>): Record<number, ItemChoice> {
  const choices: Record<number, ItemChoice> = {};
  for (const item of review.groups.flatMap((g) => g.items)) {
    if (item.state === 'new' && item.rowLead && (decision === 'confirm_all' || form[`take_${item.position}`] === 'on')) choices[item.position] = 'fill';
    if (item.state === 'conflict') choices[item.position] = form[`conflict_${item.position}`] === 'replace' ? 'replace' : 'keep';
    const pick = form[`tie_${item.position}`];
    if (item.tie && typeof pick === 'string' && /^\d+$/.test(pick) && Number(pick) < item.candidates.length) choices[item.position] = `candidate:${Number(pick)}`;
  }
  return choices;
}

/** The FHIR review page on the patient's card (issue 7, point 4): /p/<study>/s/<subject>/fhir/<number>. */
export function fhirReviewRoutes(router: Router<PortalState>, services: Services): void {
  const knex = services.db.knex;
  const path = '/p/:study/s/:subject/fhir/:number';

  // Read inside one transaction: the import's items and the patient's saved values come from one snapshot.
  const reviewOf = (access: StaffAccess, ctx: PortalContext) => {
    const number = pathNumber(ctx.params.number);
    return inTransaction(knex, (stores) => importReview(stores, access, pathSegment(ctx.params.subject), number));
  };

  async function showPage(ctx: PortalContext, access: StaffAccess, error: DomainError | null = null, status = 200): Promise<void> {
    const review = await reviewOf(access, ctx);
    renderPage(ctx, 'fhirReview', {
      title: 'review.title', study: access.study, access, review, form: formFields(ctx), reasonRequired: access.study.design.reason_required_on_update,
      error: error && { message: errorDetail(ctx.state.lang, error.code, error.params), items: error.fieldErrors.map((e) => ({ position: Number(e.pointer.split('/')[2]), code: e.code, params: e.params ?? {} })) },
    }, status);
  }

  router.get(path, signedIn, async (ctx) => {
    await showPage(ctx, await staffAccess(createStores(knex), person(ctx).id, pathSegment(ctx.params.study)));
  });

  router.post(path, signedIn, async (ctx) => {
    const access = await staffAccess(createStores(knex), person(ctx).id, pathSegment(ctx.params.study));
    const form = formFields(ctx);
    const decision = form.decision as Decision;
    if (!['confirm_chosen', 'confirm_all', 'reject'].includes(decision)) throw new DomainError('portal_bad_form');
    const ref = { study: access.study.code, subject: pathSegment(ctx.params.subject), number: pathNumber(ctx.params.number) };
    const user = person(ctx);
    try {
      await inTransaction(knex, async (stores) => {
        if (decision === 'reject') {
          await rejectImport(stores, user, { ...ref, reason: typeof form.reason === 'string' ? form.reason : undefined });
          return;
        }
        const choices = choicesOf(await importReview(stores, access, ref.subject, ref.number), decision, form);
        if (Object.keys(choices).length === 0) throw new DomainError('import_nothing_chosen');
        await confirmImport(stores, user, { ...ref, choices, reason: typeof form.change_reason === 'string' ? form.change_reason : undefined });
      });
    } catch (error) {
      // A refusal the person can act on comes back on the page itself, with what they chose still chosen.
      if (!isRefusal(error) || error.code === 'portal_forbidden' || error.code === 'import_decision_not_allowed') throw error;
      await showPage(ctx, access, error, statusOf(error.code));
      return;
    }
    ctx.redirect(ctx.path);
    ctx.status = 303;
  });
}
