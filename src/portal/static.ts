import { readFileSync } from 'node:fs';
import { projectFile } from '../projectFiles.js';
import type { PortalContext } from './portalState.js';

/**
 * The portal's own style sheet and script, served from the service (no CDN), so the page's
 * Content-Security-Policy can allow `'self'` and nothing else. Read once at start-up.
 */
// A Map, not an object: a lookup of `__proto__` or `constructor` must find nothing rather than the prototype's members.
const FILES = new Map<string, { type: string; body: Buffer }>(
  ([['portal.css', 'text/css; charset=utf-8'], ['portal.js', 'text/javascript; charset=utf-8']] as const).map(([name, type]) => [
    name,
    { type, body: readFileSync(projectFile(`src/portal/static/${name}`)) },
  ]),
);

export const STATIC_PREFIX = '/portal/static/';

/** Answers a request for one of the static files; false when the path names none of them. */
export function serveStatic(ctx: PortalContext): boolean {
  const file = FILES.get(ctx.path.slice(STATIC_PREFIX.length));
  if (!file || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return false;
  ctx.type = file.type;
  ctx.body = file.body;
  // Not patient data: the browser may keep these for an hour.
  ctx.set('Cache-Control', 'public, max-age=3600');
  return true;
}
