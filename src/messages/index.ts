import type { ErrorCode } from '../domain/errors.js';
import { en } from './en.js';
import { ru } from './ru.js';

export type Lang = 'en' | 'ru';

/**
 * A language's texts by key. Every error code needs its `<code>.detail` in each language, so a code
 * added to ErrorCode without its English and Russian text fails the build; titles, variants
 * (`<code>.detail.<variant>`), field and record texts are further keys.
 */
export type Catalog = Record<`${ErrorCode}.detail`, string> & Record<string, string>;

const catalogs: Record<Lang, Catalog> = { en, ru };

/**
 * The language of the answer: `lang=ru|en` in the query wins, then the better of English and Russian by
 * the request's Accept-Language (`acceptsLanguages`, Koa's negotiation: qualities, `ru-RU` for `ru`,
 * `*`), else English.
 */
export function negotiateLang(queryLang: unknown, acceptsLanguages: (...langs: Lang[]) => string | false): Lang {
  if (queryLang === 'ru' || queryLang === 'en') return queryLang;
  return acceptsLanguages('en', 'ru') === 'ru' ? 'ru' : 'en';
}

/** The text of `key` in `lang` (English when the catalogue lacks it), with `{param}` filled in. */
export function translate(lang: Lang, key: string, params: Record<string, unknown> = {}): string {
  const template = catalogs[lang][key] ?? en[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (params[name] === undefined ? whole : paramText(params[name])));
}

/** A message parameter as text: a list joined with commas; parameters are otherwise strings, numbers and booleans. */
export function paramText(value: unknown): string {
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : paramText(v))).join(', ');
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

/**
 * The detail of a refusal in `lang`. `params.variant` picks one of the code's wordings (why a key
 * stopped; a refusal where no API key is involved), else the code's own detail.
 */
export function detailOf(lang: Lang, code: ErrorCode, params: Record<string, unknown>): string {
  const variant = params.variant === undefined ? undefined : `${code}.detail.${paramText(params.variant)}`;
  return translate(lang, variant !== undefined && en[variant] !== undefined ? variant : `${code}.detail`, params);
}
