/** `\ud800`–`\udfff` as JSON.stringify escapes them; a proper pair is written as its two characters, never escaped. */
const LONE_SURROGATE_ESCAPE = /\\ud[89a-f][0-9a-f]{2}/i;

/**
 * A value as the JSON text of a `json` or `jsonb` parameter, its text stored exactly as a bound text
 * parameter would store it: a lone surrogate becomes U+FFFD.
 */
export function jsonParameter(value: unknown): string {
  const json = JSON.stringify(value);
  // JSON.stringify writes a lone surrogate as a \udXXX escape, which jsonb refuses: only then is every string
  // mended, so the common case pays one scan of the text rather than a call per value.
  if (!LONE_SURROGATE_ESCAPE.test(json)) return json;
  return JSON.stringify(value, (_key, member: unknown) => (typeof member === 'string' ? member.toWellFormed() : member));
}
