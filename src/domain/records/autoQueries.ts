import jsonLogic from 'json-logic-js';
import type { ColumnDef, EditCheckDef, FormDef } from '../studyDesign/types.js';
import type { VisitWindowDates } from './visitDate.js';
import { failingChecks } from './editChecks.js';
import { typedValues, type FieldIssueCode, type RecordContent } from './recordContent.js';

/** Why an automatic query stands open on a field: a value out of range, a failing edit check, or a visit date outside its window. */
export interface QueryCause {
  field: string;
  origin: 'range' | 'edit_check' | 'visit_window';
  checkCode: string | null;
  /** The query's text as stored (English: the site team's working language in the portal). */
  message: string;
  /** What a reader-facing message needs: the bound and value for ranges, both texts for edit checks. */
  params: Record<string, unknown>;
  /** The values the cause rests on: when they change, the cause counts as new (see `planQueries`). */
  evidence: string;
}

export interface OpenQuery {
  id: number;
  fieldCode: string;
  origin: string;
  checkCode: string | null;
}

/** The range breach of one number, if any; `where` is a field code or a table cell `<table>[<row>].<column>`. */
function rangeCause(field: ColumnDef, where: string, canonical: string | undefined): QueryCause[] {
  if ((field.type !== 'integer' && field.type !== 'decimal') || canonical === undefined) return [];
  const value = Number(canonical);
  const unit = field.unit ? ` ${field.unit}` : '';
  const cause = { field: where, origin: 'range' as const, checkCode: null, evidence: canonical };
  if (field.min !== undefined && value < field.min) {
    return [{ ...cause, message: `Value ${value}${unit} is below the expected minimum ${field.min}${unit}`, params: { variant: 'below', value, limit: field.min, unit } }];
  }
  if (field.max !== undefined && value > field.max) {
    return [{ ...cause, message: `Value ${value}${unit} is above the expected maximum ${field.max}${unit}`, params: { variant: 'above', value, limit: field.max, unit } }];
  }
  return [];
}

/** Range breaches of the record's numbers, in fields and in the numeric columns of its table rows. */
function rangeCauses(form: FormDef, content: RecordContent): QueryCause[] {
  return form.fields.flatMap((field) => field.type !== 'table'
    ? rangeCause(field, field.code, content.values[field.code])
    : (content.tables[field.code] ?? []).flatMap((row, index) =>
      field.columns.flatMap((column) => rangeCause(column, `${field.code}[${index}].${column.code}`, row[column.code]))));
}

/**
 * A visit date outside its visit's window counted from the enrolment date (issue 19, point 7): the
 * visit happened on another day than the schedule allows, which the site must explain or correct.
 */
function windowCause(window: VisitWindowDates | null, content: RecordContent): QueryCause[] {
  const date = window && content.values[window.field];
  if (!window || !date || (date >= window.start && date <= window.end)) return [];
  const params = { value: date, visit: window.visit, start: window.start, end: window.end };
  return [{
    field: window.field, origin: 'visit_window', checkCode: null, params, evidence: `${date}|${window.start}|${window.end}`,
    message: `Date ${date} is outside the window of visit ${window.visit} (${window.start} to ${window.end})`,
  }];
}

/**
 * Every automatic-query cause of a record's content: range breaches, failing `query` edit checks, and
 * a visit date outside its window.
 *
 * @param window - the record's visit date field and the dates its visit's window allows; null when the visit has no window
 */
export function queryCauses(form: FormDef, checks: EditCheckDef[], content: RecordContent, window: VisitWindowDates | null = null): QueryCause[] {
  const typed = typedValues(form, content);
  const failing = failingChecks(checks.filter((c) => c.action === 'query'), typed);
  return [
    ...rangeCauses(form, content),
    ...windowCause(window, content),
    ...failing.map((c) => ({
      field: c.field, origin: 'edit_check' as const, checkCode: c.code, message: c.message,
      params: { message: c.message, message_ru: c.message_ru ?? c.message },
      evidence: JSON.stringify((jsonLogic.uses_data(c.rule) as string[]).map((name) => typed[name] ?? null)),
    })),
  ];
}

/** The origins of queries the service opens and closes itself; a person's `manual` query is never closed here. */
const AUTOMATIC: ReadonlySet<string> = new Set<QueryCause['origin']>(['range', 'edit_check', 'visit_window']);

const causeKey = (c: { field?: string; fieldCode?: string; origin: string; checkCode: string | null }) => `${c.origin}|${c.field ?? c.fieldCode}|${c.checkCode ?? ''}`;

/** The field issue a per-record result reports for a cause. */
export function issueCodeOf(cause: QueryCause): FieldIssueCode {
  if (cause.origin === 'edit_check') return `edit_check:${cause.checkCode}`;
  return cause.origin === 'range' ? 'out_of_range' : 'outside_visit_window';
}

/**
 * Which queries a write opens and closes, as for typed data. A query opens when this write makes a
 * cause appear, or changes the values a standing cause rests on, and no query for it is still open
 * or answered: a query the site team closed is not reopened by an unrelated change, but a new
 * out-of-range value is queried again. An open or answered automatic query closes when its cause is gone.
 */
export function planQueries(before: QueryCause[], after: QueryCause[], open: OpenQuery[]): { toOpen: QueryCause[]; toClose: OpenQuery[] } {
  const beforeKeys = new Set(before.map((c) => `${causeKey(c)}|${c.evidence}`));
  const afterKeys = new Set(after.map(causeKey));
  const openKeys = new Set(open.map(causeKey));
  return {
    toOpen: after.filter((c) => !beforeKeys.has(`${causeKey(c)}|${c.evidence}`) && !openKeys.has(causeKey(c))),
    toClose: open.filter((q) => AUTOMATIC.has(q.origin) && !afterKeys.has(causeKey(q))),
  };
}
