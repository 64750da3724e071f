import Router from '@koa/router';
import type { Middleware } from 'koa';
import { DomainError, isDomainError, type ErrorCode } from '../domain/errors.js';
import { resumeSession } from '../domain/people/staffSessions.js';
import { isStorableText } from '../domain/storableText.js';
import { createStores } from '../db/stores.js';
import type { Lang } from '../messages/index.js';
import { statusOf } from '../errorStatus.js';
import type { RequestState, Services } from '../requestState.js';
import { logFailure } from '../logFailure.js';
import { checkCsrf } from './csrf.js';
import { formFields, parseForm } from './formBody.js';
import { errorDetail, errorTitle } from './messages/index.js';
import type { PortalContext, PortalState } from './portalState.js';
import { renderPage } from './render.js';
import { apiPageRoutes } from './routes/apiPage.js';
import { fhirReviewRoutes } from './routes/fhirReview.js';
import { homeRoutes } from './routes/home.js';
import { patientCardRoutes } from './routes/patientCard.js';
import { signInRoutes } from './routes/signIn.js';
import { readSessionCookie } from './sessionCookie.js';
import { serveStatic, STATIC_PREFIX } from './static.js';
import { showUnavailable } from './unavailable.js';

/** Paths the portal answers; everything else goes on to the API. */
const PORTAL_PATH = /^\/(p|portal)(\/|$)/;

/**
 * The portal's pages may load the style sheet and script of this service and nothing else, and post
 * forms only to it; the API's `default-src 'none'` would block them.
 */
const PORTAL_CSP = "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";
const LANG_COOKIE = 'sdx_lang';

/** `?lang=` wins and is remembered in a cookie for the next pages, then that cookie, then Accept-Language. */
function portalLang(ctx: PortalContext): Lang {
  const asked = ctx.query.lang;
  if (asked === 'en' || asked === 'ru') {
    ctx.append('Set-Cookie', `${LANG_COOKIE}=${asked}; Path=/; SameSite=Lax; Max-Age=31536000`);
    return asked;
  }
  const remembered = ctx.cookies.get(LANG_COOKIE);
  return remembered === 'en' || remembered === 'ru' ? remembered : ctx.state.lang;
}

/** A refusal or a failure as a page in the person's language; unknown failures are logged and show only the request id. */
function errorPage(ctx: PortalContext, error: unknown): void {
  if (showUnavailable(ctx, error)) return;
  let code: ErrorCode = 'internal';
  const httpStatus = (error as { status?: number }).status;
  // A domain error's own page, 503 `unavailable` included; only a failure of the service is logged.
  if (isDomainError(error) && statusOf(error.code) !== 500) code = error.code;
  else if (httpStatus === 413) code = 'payload_too_large';
  else if (typeof httpStatus === 'number' && httpStatus >= 400 && httpStatus < 500) code = 'portal_bad_form';
  else {
    logFailure({ requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, error);
  }
  const params = isDomainError(error) ? error.params : {};
  const lang = ctx.state.lang;
  renderPage(ctx, 'error', { title: 'error.title', heading: errorTitle(lang, code), message: errorDetail(lang, code, params) }, statusOf(code));
}

/**
 * The staff portal (issue 7): server-rendered pages under /portal and /p/<study>, outside the API
 * contract. Each request resumes its session from the cookie, parses a form post, checks its CSRF
 * token, and then reaches a page, which checks the person's role, study and sites itself.
 */
export function createPortal(services: Services): Middleware<RequestState> {
  const router = new Router<PortalState>();
  signInRoutes(router, services);
  homeRoutes(router, services);
  apiPageRoutes(router, services);
  patientCardRoutes(router, services);
  fhirReviewRoutes(router, services);
  const routes = router.routes();

  return async (ctx, next) => {
    if (!PORTAL_PATH.test(ctx.path)) {
      await next();
      return;
    }
    const portalCtx = ctx as unknown as PortalContext;
    ctx.set('Content-Security-Policy', PORTAL_CSP);
    ctx.state.lang = portalLang(portalCtx);
    if (ctx.path.startsWith(STATIC_PREFIX) && serveStatic(portalCtx)) return;
    try {
      const stores = createStores(services.db.knex);
      const session = await resumeSession(stores.sessions, readSessionCookie(ctx, services.config));
      portalCtx.state.session = session;
      if (session?.userId) portalCtx.state.user = await stores.people.findUserById(session.userId);
      await parseForm(ctx, () => Promise.resolve());
      checkCsrf(portalCtx);
      // A NUL (`%00`) names no study, patient or import, and PostgreSQL could not even look it up.
      if (/%00/.test(ctx.path)) throw new DomainError('portal_not_found');
      if (Object.values(formFields(portalCtx)).flat().some((v) => typeof v === 'string' && !isStorableText(v))) throw new DomainError('portal_bad_form');
      let matched = true;
      await routes(portalCtx, () => {
        matched = false;
        return Promise.resolve();
      });
      if (!matched) throw new DomainError('portal_not_found');
    } catch (error) {
      errorPage(portalCtx, error);
    }
  };
}
