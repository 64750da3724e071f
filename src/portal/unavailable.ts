import { isDatabaseUnavailable } from '../db/pgErrors.js';
import { errorDetail, errorTitle } from './messages/index.js';
import type { PortalContext } from './portalState.js';
import { renderPage } from './render.js';

/** Seconds a person's browser (or a monitor) is told to wait; the API's 503 says the same. */
const RETRY_AFTER_SECONDS = 5;

/**
 * A database outage as the portal's answer (issue 21.5): 503 with Retry-After and a page saying to try
 * again, like the API's `unavailable` problem, instead of the 500 of an unknown failure. Nothing is
 * logged: the outage is not a fault of the service, and every page would repeat it. The next request
 * reconnects, so the portal recovers without a restart. False when the error is not an outage.
 */
export function showUnavailable(ctx: PortalContext, error: unknown): boolean {
  if (!isDatabaseUnavailable(error)) return false;
  const lang = ctx.state.lang;
  ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
  renderPage(ctx, 'error', { title: 'error.title', heading: errorTitle(lang, 'unavailable'), message: errorDetail(lang, 'unavailable', {}) }, 503);
  return true;
}
