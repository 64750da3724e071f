/**
 * Which visit a dated value belongs to. Windows count from the enrolment date (day 0): a visit with
 * `planned_day` P and window {before B, after A} covers days P−B … P+A. When the visit's date is
 * already recorded for the patient, the window is centred on that date instead, because the values
 * measured at the visit are those taken around the day it really happened.
 *
 * Repeating visits (unscheduled) and visits without a planned day have no window: nothing is placed in
 * them automatically, since nothing tells which occurrence a value would belong to.
 */
import type { StudyDesign, VisitDef } from '../studyDesign/types.js';
import { dayNumber } from './fhirDates.js';

/** A visit that has a window: its target day and the first and last day it covers (days since 1970). */
export interface VisitSlot {
  visit: VisitDef;
  /** Position of the visit in the design, for ties. */
  order: number;
  target: number;
  start: number;
  end: number;
  forms: ReadonlySet<string>;
}

/**
 * The windows of the study's scheduled visits for one patient.
 *
 * @param enrolledOn - the patient's enrolment date, `YYYY-MM-DD`
 * @param recordedVisitDates - visit code → the visit's date as already recorded, `YYYY-MM-DD`
 */
export function visitSlots(design: StudyDesign, enrolledOn: string, recordedVisitDates: Record<string, string> = {}): VisitSlot[] {
  const day0 = dayNumber(enrolledOn);
  if (day0 === null) throw new Error(`enrolledOn is not a YYYY-MM-DD date: ${enrolledOn}`);
  const slots: VisitSlot[] = [];
  design.visits.forEach((visit, order) => {
    if (visit.repeating || visit.planned_day === null) return;
    const recorded = recordedVisitDates[visit.code];
    const target = (recorded ? dayNumber(recorded) : null) ?? day0 + visit.planned_day;
    slots.push({
      visit,
      order,
      target,
      start: target - visit.window.before,
      end: target + visit.window.after,
      forms: new Set(visit.forms),
    });
  });
  return slots;
}

/**
 * The visit having `form` whose window contains `day`; when windows overlap, the one whose target day
 * is nearest, then the earlier visit. Null when no window with the form contains the day.
 */
export function slotContaining(slots: readonly VisitSlot[], day: number, form: string): VisitSlot | null {
  let best: VisitSlot | null = null;
  for (const slot of slots) {
    if (!slot.forms.has(form) || day < slot.start || day > slot.end) continue;
    if (!best || Math.abs(day - slot.target) < Math.abs(day - best.target)) best = slot;
  }
  return best;
}

/**
 * The visit at which a history entry dated `day` is recorded in a table form. Anything from before
 * enrolment (medical history, a medication started years ago) goes to the first visit having `form`,
 * usually screening; anything from enrolment on goes to the earliest visit having `form` whose window
 * ends on or after that day, so something that started between visits is recorded at the next visit
 * that has the form (a concomitant medication started on day 10 goes to week 4 in the demo study). An
 * undated entry goes to the first visit with the form. Null when the day is after the last such window.
 *
 * @param enrolmentDay - day 0 of the schedule (days since 1970)
 */
export function slotRecording(slots: readonly VisitSlot[], day: number | null, form: string, enrolmentDay: number): VisitSlot | null {
  const history = day === null || day < enrolmentDay;
  let best: VisitSlot | null = null;
  for (const slot of slots) {
    if (!slot.forms.has(form) || (!history && slot.end < day)) continue;
    if (!best || slot.end < best.end || (slot.end === best.end && slot.order < best.order)) best = slot;
  }
  return best;
}
