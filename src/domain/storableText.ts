/** NUL, or half of a surrogate pair: with the `u` flag a whole pair is one code point and does not match. */
const UNSTORABLE = /[\u0000\p{Cs}]/u;

/**
 * Whether PostgreSQL can keep the text as it is. Text and jsonb cannot hold NUL, and UTF-8 cannot
 * encode half of a surrogate pair (which JSON can still carry as a `\ud800` escape): such text is
 * refused where it enters, because storing or even comparing it would fail the whole statement.
 */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}
