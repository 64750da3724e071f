import type { FhirImportItem } from './fhirImportItem.js';

/**
 * The import's item at a position already known to be one of its items (a choice's position checked by
 * resolveChoices, a record's positions made from the items): none there is a bug, reported as one.
 */
export function itemAt(items: readonly FhirImportItem[], position: number): FhirImportItem {
  const item = items[position];
  if (!item) throw new Error(`the import has no item at position ${position}`);
  return item;
}
