/**
 * A patient number from the study's format: `{site}` is the site number and `{seq:N}` the site's
 * sequence number zero-padded to N digits (`{site}-{seq:3}` gives `01-007`). A sequence longer
 * than N digits is written in full rather than cut.
 */
export function subjectNumber(format: string, site: string, seq: number): string {
  return format.replace('{site}', site).replace(/\{seq:(\d)\}/, (_whole, width: string) => String(seq).padStart(Number(width), '0'));
}
