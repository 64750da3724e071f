import { isAscii } from 'node:buffer';

/** Runs of bytes beyond ASCII, as a latin1 string holds them (one character per byte). */
const BEYOND_ASCII = /[\x80-\xff]+/g;

/**
 * The text of a JSON body, given as valid UTF-8 bytes, with every character beyond ASCII written as a
 * `\uXXXX` escape: JSON.parse reads the escape back as the same character (a pair of them for one
 * beyond U+FFFF), and bytes beyond ASCII are only valid inside JSON strings, so a text that was not
 * JSON is still not JSON.
 *
 * Why: Node 20 decodes UTF-8 holding any character beyond ASCII one character at a time from the first
 * such character on, into a string of two bytes per character when one is beyond Latin-1, and parsing
 * that string takes longer as well. Decoding as latin1 copies the bytes, and only the few runs beyond
 * ASCII are decoded and escaped. For the 3.8 MB Synthea bundle, which holds 72 such bytes, decoding and
 * parsing fell from 43 to 22 ms (bench/README.md).
 *
 * @param bytes - valid UTF-8 (checked with isUtf8 before): a run of bytes beyond ASCII then holds whole characters.
 */
export function asciiJsonText(bytes: Buffer): string {
  const text = bytes.toString('latin1');
  if (isAscii(bytes)) return text;
  return text.replace(BEYOND_ASCII, (run: string, at: number) => {
    const characters = Buffer.from(run, 'latin1').toString('utf8');
    // After an odd number of backslashes the run follows a lone `\`, an invalid escape: written as an
    // escape it would make one valid (`\\u00e9`), so it stays as it came and the text stays invalid.
    return escapedBy(text, at) ? characters : escaped(characters);
  });
}

/** Whether the character at `at` follows an odd number of backslashes. */
function escapedBy(text: string, at: number): boolean {
  let backslashes = 0;
  while (at - backslashes > 0 && text.charCodeAt(at - backslashes - 1) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

const BACKSLASH = 0x5c;

/** Each UTF-16 code unit of the characters as a JSON `\uXXXX` escape. */
function escaped(characters: string): string {
  let out = '';
  for (let i = 0; i < characters.length; i++) out += `\\u${characters.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}
