const QUOTE = 34;
const BACKSLASH = 92;
const SPACE = 32;

/**
 * JSON text written by PostgreSQL (`json_build_object`, jsonb's text), as UTF-8, without the blanks it puts
 * after `:` and `,`, so that a records page is spaced exactly like every other answer (`JSON.stringify`'s
 * compact form) while the page is still spliced from the database's text, never parsed (bench/README.md,
 * "Records page as JSON text"). PostgreSQL puts only spaces between tokens; blanks inside strings stay.
 * Text already compact, such as JSON.stringify's, comes back unchanged, so a whole answer can go through.
 *
 * One pass over the bytes, moving them down in place: no string is made (building the compact text as a
 * string cost a records page more in its concatenations and their encoding than the pass itself,
 * bench/README.md). A byte of a multi-byte UTF-8 character is never a quote, a backslash or a space.
 *
 * @returns the same memory as `bytes`, shortened
 */
export function compactJsonBytes(bytes: Buffer): Buffer {
  let to = 0;
  let inString = false;
  for (let from = 0; from < bytes.length; from++) {
    const c = bytes[from]!;
    if (inString) {
      if (c === BACKSLASH) {
        bytes[to++] = c;
        from++;
      } else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === SPACE) continue;
    bytes[to++] = bytes[from]!;
  }
  return bytes.subarray(0, to);
}
