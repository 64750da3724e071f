/**
 * A patient number from the study's format: `{site}` is the site number and `{seq:N}` the site's
 * sequence number zero-padded to N digits (`{site}-{seq:3}` gives `01-007`). A sequence longer
 * than N digits is written in full rather than cut.
 */
export function subjectNumber(format: string, site: string, seq: number): string {
  return format.replace('{site}', site).replace(/\{seq:(\d)\}/, (_whole, width: string) => String(seq).padStart(Number(width), '0'));
}

/**
 * The site's mark in a patient number as the study's format places it: the site number with the
 * literal text that joins it to the sequence (`{site}-{seq:3}` at site 01 gives the prefix `01-`;
 * `P{seq:4}-{site}` at site 02 gives the suffix `-02`), anchored at the end of the number it sits at.
 */
function siteMark(format: string, site: string): { text: string; at: 'start' | 'end' } {
  const [before, after] = format.split('{site}') as [string, string];
  // The format holds exactly two placeholders, so one side of {site} is plain text.
  if (!before.includes('{')) return { text: before + site + after.replace(/\{.*$/, ''), at: 'start' };
  return { text: before.replace(/^.*\}/, '') + site + after, at: 'end' };
}

/**
 * Whether a patient number chosen by the sender belongs to its site (issue 19, point 8): it must carry
 * the site's mark where the study's format puts it, and something besides, so that `02-009` cannot be
 * enrolled at site 01 and every number still tells its site.
 */
export function carriesSite(format: string, site: string, subject: string): boolean {
  const mark = siteMark(format, site);
  if (subject.length <= mark.text.length) return false;
  return mark.at === 'start' ? subject.startsWith(mark.text) : subject.endsWith(mark.text);
}
