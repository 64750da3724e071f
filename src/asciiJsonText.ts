import { isAscii } from 'node:buffer';

/** Runs of bytes beyond ASCII, as a latin1 string holds them (one character per byte). */
const BEYOND_ASCII = /[\x80-\xff]+/g;
/** A body with more runs beyond ASCII than this is decoded the plain way. */
const MOST_RUNS = 1000;
/** Windows of bytes looked at, spread over a body, to judge whether it is nearly all ASCII. */
const SAMPLED_WINDOWS = 16;
const WINDOW_BYTES = 4096;

/**
 * The text of a JSON body, given as valid UTF-8 bytes, for JSON.parse. A body that is ASCII, or nearly
 * all ASCII, is decoded as latin1 (a copy of its bytes) with each run of characters beyond ASCII written
 * as `\uXXXX` escapes, which JSON.parse reads back as the same characters (a pair of them for one beyond
 * U+FFFF); bytes beyond ASCII are only valid inside JSON strings, so a text that was not JSON is still
 * not JSON. Any other body is decoded the plain way.
 *
 * Why: Node 20 decodes UTF-8 three times slower than latin1 even when it is all ASCII, and one character
 * beyond ASCII sends it, from that character on, through a decoder that goes one character at a time
 * into a string of two bytes per character, which JSON.parse then reads more slowly. In the profile of
 * the FHIR review, decoding the 3.8 MB Synthea bundle (72 bytes beyond ASCII) was 29 % of the service's
 * time (bench/README.md). A body mostly beyond ASCII (Russian text, say) gains nothing this way and
 * loses the sampling: 0.1 ms for 4 MB.
 *
 * @param bytes - valid UTF-8 (checked with isUtf8 before): a run of bytes beyond ASCII then holds whole characters.
 */
export function asciiJsonText(bytes: Buffer): string {
  if (isAscii(bytes)) return bytes.toString('latin1');
  if (!nearlyAllAscii(bytes)) return bytes.toString('utf8');
  const text = bytes.toString('latin1');
  const parts: string[] = [];
  let from = 0;
  let runs = 0;
  BEYOND_ASCII.lastIndex = 0;
  for (let run = BEYOND_ASCII.exec(text); run !== null; run = BEYOND_ASCII.exec(text)) {
    if (++runs > MOST_RUNS) return bytes.toString('utf8');
    const characters = Buffer.from(run[0], 'latin1').toString('utf8');
    // After an odd number of backslashes the run follows a lone `\`, an invalid escape: written as an
    // escape it would make one valid (`\\u00e9`), so it stays as it came and the text stays invalid.
    parts.push(text.slice(from, run.index), escapedBy(text, run.index) ? characters : escaped(characters));
    from = BEYOND_ASCII.lastIndex;
  }
  parts.push(text.slice(from));
  return parts.join('');
}

/** Whether at most one byte in a thousand is beyond ASCII in windows spread over the body. */
function nearlyAllAscii(bytes: Buffer): boolean {
  const step = Math.max(WINDOW_BYTES, Math.ceil(bytes.length / SAMPLED_WINDOWS));
  let seen = 0;
  let beyond = 0;
  for (let start = 0; start < bytes.length; start += step) {
    const end = Math.min(bytes.length, start + WINDOW_BYTES);
    for (let i = start; i < end; i++) if (bytes[i] >= 0x80) beyond++;
    seen += end - start;
  }
  return beyond * 1000 <= seen;
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
