/**
 * The items and counts of a FHIR import: the spec's `FhirImportItem` and `FhirImportCounts`
 * (spec/openapi.yaml), taken from the types generated from it, so that the mapping cannot drift from the
 * contract and the handler returns them as they are.
 */
import type { components } from '../../../generated/openapi.js';

/** One value found in the file and where it goes in the eCRF. */
export type FhirImportItem = components['schemas']['FhirImportItem'];

/** Items by state: `values` is every item that is not skipped; `saved` is filled by `mode=save`. */
export type FhirImportCounts = components['schemas']['FhirImportCounts'];

/** Why an item is skipped (see `FhirImportItem.reason` in the spec). */
export type SkipReason = NonNullable<FhirImportItem['reason']>;

/** `saved` is set later by `mode=save`; the mapping gives the other four. */
export type ItemState = FhirImportItem['state'];

/** The coding of the FHIR element that was mapped. */
export type ItemCoding = FhirImportItem['code'];

/** Whether an item waits for the site team's decision: a new value, a conflict, or a tie (skipped, but waiting for a pick). */
export function waitsForDecision(item: Pick<FhirImportItem, 'state' | 'tie'>): boolean {
  return item.state === 'new' || item.state === 'conflict' || item.tie === true;
}

/**
 * An import as a reader who may not see some forms (a blinded maker's key) is shown it: without the items on
 * those forms, counted from what is left, so that a count cannot tell of a hidden value. The read of one
 * import and a replayed FHIR call both show it so.
 */
export function withoutHiddenItems<A extends { counts: FhirImportCounts; items: Pick<FhirImportItem, 'form' | 'state'>[] }>(row: A, hidden: ReadonlySet<string>): A {
  if (!row.items.some((item) => item.form !== null && hidden.has(item.form))) return row;
  const items = row.items.filter((item) => item.form === null || !hidden.has(item.form));
  return { ...row, items, counts: countItems(items) };
}

/** The counts of a list of items, always derived from their states so that the two never disagree. */
export function countItems(items: readonly Pick<FhirImportItem, 'state'>[]): FhirImportCounts {
  const counts: FhirImportCounts = { values: 0, conflicts: 0, same: 0, skipped: 0, saved: 0 };
  for (const item of items) {
    if (item.state === 'skipped') counts.skipped++;
    else counts.values++;
    if (item.state === 'conflict') counts.conflicts++;
    if (item.state === 'same') counts.same++;
    if (item.state === 'saved') counts.saved++;
  }
  return counts;
}
