import type { ErrorCode } from '../../domain/errors.js';
import { detailOf, paramText, translate, type Lang } from '../../messages/index.js';
import { en } from './en.js';
import { ru } from './ru.js';

/**
 * The portal's own texts (labels, headings, notices), English and Russian. They live apart from the
 * API's catalogue in src/messages, which keeps the texts a client of the API reads; the
 * refusals the domain gives (`<code>.detail`) are taken from there, so each is worded once.
 */
const catalogs: Record<Lang, Record<string, string>> = { en, ru };

export function portalText(lang: Lang, key: string, params: Record<string, unknown> = {}): string {
  const template = catalogs[lang][key] ?? en[key];
  if (template === undefined) return translate(lang, key, params);
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (params[name] === undefined ? whole : paramText(params[name])));
}

/** The heading of an error page: the portal's own wording, else the API's title of that code. */
export function errorTitle(lang: Lang, code: string): string {
  if (en[`error.${code}.title`] !== undefined) return portalText(lang, `error.${code}.title`);
  const shared = translate(lang, `${code}.title`);
  return shared === `${code}.title` ? portalText(lang, 'error.refused.title') : shared;
}

/** The explanation on an error page: the portal's own wording, else the domain's refusal text, as the API and the command line give it. */
export function errorDetail(lang: Lang, code: ErrorCode, params: Record<string, unknown>): string {
  return en[`error.${code}.detail`] !== undefined ? portalText(lang, `error.${code}.detail`, params) : detailOf(lang, code, params);
}

