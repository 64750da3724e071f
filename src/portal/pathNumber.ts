import { DomainError } from '../domain/errors.js';

/** The largest value of a PostgreSQL `integer` column, which every number in a portal address (key id, import number) is. */
const INT4_MAX = 2_147_483_647;

/**
 * A number in a portal address (`/api/keys/<id>`, `/fhir/<number>`), as written by the portal's own links:
 * decimal digits, no sign, exponent or leading zero, and within the column's range. Anything else names no
 * page, so it is a 404 before PostgreSQL sees it (a value beyond the range was its 500, issue 21.6).
 */
export function pathNumber(segment: string | undefined): number {
  const value = segment !== undefined && /^[1-9][0-9]{0,9}$/.test(segment) ? Number(segment) : NaN;
  if (!(value <= INT4_MAX)) throw new DomainError('portal_not_found');
  return value;
}
