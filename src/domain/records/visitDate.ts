import { visitSlots } from '../fhir/visitWindows.js';
import type { StudyDesign } from '../studyDesign/types.js';

/** A form's visit date field at one visit, and the first and last day its visit's window allows (`YYYY-MM-DD`). */
export interface VisitWindowDates {
  field: string;
  visit: string;
  start: string;
  end: string;
}

const MS_PER_DAY = 86_400_000;
const dateOf = (day: number) => new Date(day * MS_PER_DAY).toISOString().slice(0, 10);

/**
 * The field holding the day a form was taken at its visit: the `date_field` the design's FHIR mapping
 * names for the form (the date of measurement of the vital signs in the demo study). A form without
 * one (laboratory panels, tables) has no visit date to check.
 */
function visitDateField(design: StudyDesign, form: string): string | null {
  return design.fhir_mapping.observations.find((m) => m.form === form && m.date_field !== undefined)?.date_field ?? null;
}

/**
 * The window a record's visit date must fall in (issue 19, point 7), counted from the enrolment date
 * exactly as the FHIR import places values (`visitSlots`): days planned_day − before … planned_day + after.
 * Null when the study switches the check off (`visit_window_queries: false`), for a form without a
 * visit date field, and for a visit without a planned day (unscheduled). A design stored before the
 * member existed lacks it and gets the check, as the schema's default does for a new design.
 */
export function visitWindowDates(design: StudyDesign, visit: string, form: string, enrolledOn: string): VisitWindowDates | null {
  const field = design.visit_window_queries !== false ? visitDateField(design, form) : null;
  const slot = field && visitSlots(design, enrolledOn).find((s) => s.visit.code === visit);
  if (!field || !slot) return null;
  return { field, visit, start: dateOf(slot.start), end: dateOf(slot.end) };
}
