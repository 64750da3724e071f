import type Router from '@koa/router';
import { isDomainError } from '../../domain/errors.js';
import { signIn } from '../../domain/people/signIn.js';
import { endSession, startSession } from '../../domain/people/staffSessions.js';
import { createStores } from '../../db/stores.js';
import type { Services } from '../../requestState.js';
import { fieldText, formFields } from '../formBody.js';
import type { PortalContext, PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { clearSessionCookie, setSessionCookie } from '../sessionCookie.js';
import { safeNext, SIGN_IN_PATH } from '../signedIn.js';

/** Sign-in and sign-out of staff (issue 7, point 1). */
export function signInRoutes(router: Router<PortalState>, services: Services): void {
  const { config } = services;

  /** The sign-in form needs a session before anyone signs in: it carries the form's CSRF token. */
  async function showForm(ctx: PortalContext, next: string, failed: boolean): Promise<void> {
    if (!ctx.state.session) {
      ctx.state.session = await startSession(createStores(services.db.knex).sessions, null);
      setSessionCookie(ctx, config, ctx.state.session.id);
    }
    renderPage(ctx, 'signIn', { title: 'signIn.title', next, failed, email: failed ? fieldText(formFields(ctx).email) : '' }, failed ? 401 : 200);
  }

  router.get(SIGN_IN_PATH, async (ctx) => {
    const next = safeNext(ctx.query.next);
    if (ctx.state.user) {
      ctx.redirect(next);
      ctx.status = 303;
      return;
    }
    await showForm(ctx, next, false);
  });

  router.post(SIGN_IN_PATH, async (ctx) => {
    const form = formFields(ctx);
    const next = safeNext(form.next);
    // Not in a transaction: a failed attempt must stay counted, although the sign-in is refused.
    const stores = createStores(services.db.knex);
    try {
      const user = await signIn(stores, { email: fieldText(form.email), password: fieldText(form.password) });
      // A new session id at sign-in, so an id someone planted in this browser before is worth nothing.
      if (ctx.state.session) await endSession(stores.sessions, ctx.state.session.id);
      const session = await startSession(stores.sessions, user.id);
      await stores.sessions.removeExpired();
      setSessionCookie(ctx, config, session.id);
      ctx.redirect(next);
      ctx.status = 303;
    } catch (error) {
      if (!isDomainError(error) || error.code !== 'sign_in_failed') throw error;
      await showForm(ctx, next, true);
    }
  });

  router.post('/portal/sign-out', async (ctx) => {
    if (ctx.state.session) await endSession(createStores(services.db.knex).sessions, ctx.state.session.id);
    ctx.state.session = undefined;
    ctx.state.user = undefined;
    clearSessionCookie(ctx, config);
    ctx.redirect(SIGN_IN_PATH);
    ctx.status = 303;
  });
}
