/**
 * The items and counts of a FHIR import. Member names and value types are those of the spec's
 * `FhirImportItem` and `FhirImportCounts` (spec/openapi.yaml), unchanged, so that the handler returns
 * them as they are; `test/unit/fhirMapping.test.ts` checks them against the spec's schemas.
 */

/** Why an item is skipped (see `FhirImportItem.reason` in the spec). */
export type SkipReason = 'no_mapping' | 'no_visit' | 'unit_not_convertible' | 'invalid' | 'not_chosen';

/** `saved` is set later by `mode=save`; the mapping gives the other four. */
export type ItemState = 'new' | 'same' | 'conflict' | 'skipped' | 'saved';

/** The mapping's rule that chose among competing observations. */
export type ChosenBy = 'nearest' | 'first' | 'last' | 'min' | 'max';

/** The coding of the FHIR element that was mapped. */
export interface ItemCoding {
  system: string;
  code: string;
  display: string | null;
}

/** An observation that competed for a place, with its value in the field's unit. */
export interface ItemCandidate {
  resource: string;
  value: string;
  effective: string | null;
}

/** One value found in the file and where it goes in the eCRF. */
export interface FhirImportItem {
  /** `<type>/<id>` of the resource, or its fullUrl when it has no id. */
  resource: string;
  code: ItemCoding;
  form: string | null;
  /** Field code, or `<table>.<column>` for a table cell. */
  field: string | null;
  /** 0-based row of a table field, otherwise null. */
  row: number | null;
  visit: string | null;
  instance: number | null;
  /** The value in the field's unit, written as in the records call; null when skipped. */
  value: string | null;
  /** The field's unit, or null. */
  unit: string | null;
  original: { value: string; unit: string | null };
  effective: string | null;
  saved_value: string | null;
  state: ItemState;
  reason: SkipReason | null;
  chosen_by: ChosenBy | null;
  candidates: ItemCandidate[];
}

/** Items by state: `values` is every item that is not skipped; `saved` is filled by `mode=save`. */
export interface FhirImportCounts {
  values: number;
  conflicts: number;
  same: number;
  skipped: number;
  saved: number;
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
