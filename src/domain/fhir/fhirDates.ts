/**
 * FHIR date and dateTime strings as the mapping uses them: the calendar day for visit windows, an
 * instant for ordering, and the normalised form shown in import items.
 */

const FULL_DATE = /^(\d{4})-(\d{2})-(\d{2})/;
const MS_PER_DAY = 86_400_000;

/**
 * The calendar date of a FHIR date or dateTime as written, in the sender's own time zone:
 * `2026-03-09T01:30:00+03:00` is 9 March at the hospital even though it is 8 March in UTC, and visit
 * windows are counted in the patient's days. Null for a partial date (`2012`, `2012-11`).
 */
export function localDate(value: string | undefined | null): string | null {
  const match = value ? FULL_DATE.exec(value) : null;
  return match ? `${match[1]}-${match[2]}-${match[3]}` : null;
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` date, or null if it is not one. */
export function dayNumber(date: string): number | null {
  const match = FULL_DATE.exec(date);
  if (!match) return null;
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return Number.isNaN(ms) ? null : Math.round(ms / MS_PER_DAY);
}

/** Milliseconds since the epoch of a date or dateTime (a date counts as its UTC midnight), or null. */
export function instantOf(value: string): number | null {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * The `effective` of an import item: a dateTime in UTC (`2026-03-09T06:40:00Z`, as in the spec's
 * example; milliseconds only when there are some), a date or partial date unchanged.
 */
export function normaliseEffective(value: string): string {
  if (!value.includes('T')) return value;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return value;
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
