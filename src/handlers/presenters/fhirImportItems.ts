import type { FhirImportItem } from '../../domain/fhir/fhirImportItem.js';
import type { ItemPlacement } from '../../domain/fhir/itemPlacement.js';
import type { StudyDesign } from '../../domain/studyDesign/types.js';
import { translate, type Lang } from '../../messages/index.js';

/**
 * An import's items as the FHIR call returns them: each with its placement, in words of the answer's
 * language. The words are the review page's (it reads the same `fhirPlacement.<code>` texts).
 */
export function itemsWithPlacement(items: readonly FhirImportItem[], placements: readonly (ItemPlacement | null)[], design: StudyDesign, lang: Lang): FhirImportItem[] {
  const visitNames = new Map(design.visits.map((v) => [v.code, v.name]));
  return items.map((item, position) => {
    const placement = placements[position];
    if (!placement) return item;
    const text = translate(lang, `fhirPlacement.${placement.code}`, { day: placement.day, visit: visitNames.get(item.visit!) ?? item.visit });
    return { ...item, placement: { ...placement, text } };
  });
}
