import type { ParameterizedContext } from 'koa';
import type { Config } from '../config.js';

/**
 * The session cookie: HttpOnly (scripts never see it), SameSite=Lax (not sent with cross-site form
 * posts, yet sent when a person follows a link to a review page from another system), no expiry (it
 * dies with the browser; the server ends the session anyway). It is Secure, with the `__Host-`
 * prefix that pins it to this host and path, whenever BASE_URL is https. Over plain http (the local
 * demo on http://localhost) a Secure cookie would not come back, so it is sent without that flag there.
 */
function sessionCookieName(config: Config): string {
  return secure(config) ? '__Host-sdx_session' : 'sdx_session';
}

function secure(config: Config): boolean {
  return config.baseUrl.startsWith('https://');
}

function attributes(config: Config): string {
  return `Path=/; HttpOnly; SameSite=Lax${secure(config) ? '; Secure' : ''}`;
}

export function readSessionCookie(ctx: ParameterizedContext, config: Config): string | undefined {
  return ctx.cookies.get(sessionCookieName(config)) || undefined;
}

export function setSessionCookie(ctx: ParameterizedContext, config: Config, value: string): void {
  // Written by hand: Koa's cookie writer refuses a Secure cookie when TLS ends at a proxy it was not told about.
  ctx.append('Set-Cookie', `${sessionCookieName(config)}=${value}; ${attributes(config)}`);
}

export function clearSessionCookie(ctx: ParameterizedContext, config: Config): void {
  ctx.append('Set-Cookie', `${sessionCookieName(config)}=; ${attributes(config)}; Max-Age=0`);
}
