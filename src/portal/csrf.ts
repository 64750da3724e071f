import { csrfTokenMatches } from '../domain/people/staffSessions.js';
import { DomainError } from '../domain/errors.js';
import { formFields } from './formBody.js';
import type { PortalContext } from './portalState.js';

/** The name of the hidden field that carries the session's synchronizer token in every form. */
export const CSRF_FIELD = '_csrf';

/**
 * Refuses a form post that does not carry its session's synchronizer token: a page of another site
 * can make a browser post here, but cannot read the token out of our pages (issue 7: CSRF
 * protection on every form). Every state-changing request of the portal is a POST.
 */
export function checkCsrf(ctx: PortalContext): void {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return;
  if (!ctx.state.session || !csrfTokenMatches(ctx.state.session, formFields(ctx)[CSRF_FIELD])) throw new DomainError('csrf_failed');
}
