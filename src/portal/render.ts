import { Eta } from 'eta';
import { projectFile } from '../projectFiles.js';
import { CSRF_FIELD } from './csrf.js';
import { portalText } from './messages/index.js';
import type { PortalContext } from './portalState.js';

/**
 * Pages are Eta templates (src/portal/templates). Eta is maintained, typed, has no dependencies,
 * and escapes every `<%= %>` interpolation for HTML (`autoEscape`), so a value from the database
 * (a key name, a query message, a FHIR value) is always text on the page, never markup. Raw output
 * (`<%~ %>`) is used only to place a rendered template inside the layout.
 */
const eta = new Eta({
  views: projectFile('src/portal/templates'),
  autoEscape: true,
  autoTrim: [false, 'nl'],
  cache: true,
});

/** A timestamp as the portal shows it: UTC to the minute, the same for every reader. */
function formatTime(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '';
  const date = value instanceof Date ? value : new Date(value);
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** Renders a page with what every template may use: texts in the request's language, the CSRF token, the person. */
export function renderPage(ctx: PortalContext, template: string, data: Record<string, unknown> = {}, status = 200): void {
  const lang = ctx.state.lang;
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = eta.render(template, {
    lang,
    t: (key: string, params?: Record<string, unknown>) => portalText(lang, key, params),
    time: formatTime,
    csrfField: CSRF_FIELD,
    csrf: ctx.state.session?.csrfToken ?? '',
    user: ctx.state.user ?? null,
    // The language links reload the page in the other language; a page that answered a form post has no address to reload, so they go home.
    langBase: ctx.method === 'GET' ? ctx.path : '/portal',
    requestId: ctx.state.requestId,
    title: '',
    study: null,
    ...data,
  });
}
