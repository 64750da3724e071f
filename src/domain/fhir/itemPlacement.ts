import type { StudyDesign } from '../studyDesign/types.js';
import { tableOf } from './cellField.js';
import { dayNumber, localDate } from './fhirDates.js';
import type { FhirImportItem } from './fhirImportItem.js';

/**
 * Why an imported value sits at its visit (spec, `FhirImportItem.placement`): the mapping's placement rule
 * (`mapToEcrf`) as a machine code. Not an enum of the contract, so a rule added later is a new code.
 */
type PlacementCode = 'in_visit_window' | 'first_visit_with_form' | 'next_visit_with_form' | 'adverse_event_candidate';

/** The rule and the item's day counted from enrolment (day 0), which the texts name. */
export interface ItemPlacement { code: PlacementCode; day: number }

/**
 * Whether an item is a row of a table that receives conditions begun after enrolment: an adverse-event
 * candidate, for the site team to judge, never saved automatically.
 */
export function adverseEventCandidates(design: StudyDesign): (item: Pick<FhirImportItem, 'row' | 'form' | 'field'>) => boolean {
  const tables = new Set(design.fhir_mapping.conditions.flatMap((m) => (m.onset_after_enrolment ? [`${m.onset_after_enrolment.form}|${m.onset_after_enrolment.field}`] : [])));
  return (item) => item.row !== null && item.field !== null && tables.has(`${item.form}|${tableOf(item.field)}`);
}

/**
 * The placement of each item, null for one without a visit or a date. A plain value is in the window of
 * its visit; a table row is an adverse-event candidate, history recorded at the first visit with its form
 * (a condition present at enrolment, anything begun before it), or placed at the next visit with its form.
 */
export function itemPlacements(items: readonly FhirImportItem[], design: StudyDesign, enrolledOn: string): (ItemPlacement | null)[] {
  const enrolmentDay = dayNumber(enrolledOn);
  const isCandidate = adverseEventCandidates(design);
  return items.map((item) => {
    const date = localDate(item.effective);
    const day = date === null || enrolmentDay === null ? null : dayNumber(date)! - enrolmentDay;
    if (day === null || !item.visit) return null;
    if (item.row === null) return { code: 'in_visit_window', day };
    if (isCandidate(item)) return { code: 'adverse_event_candidate', day };
    const history = day < 0 || item.resource.startsWith('Condition/');
    return { code: history ? 'first_visit_with_form' : 'next_visit_with_form', day };
  });
}
