import type { ColumnDef, FormDef, TableFieldDef } from '../studyDesign/types.js';
import { parseFieldValue, typedOf } from './fieldValue.js';
import { markText, markWrittenIn, type AuditValueKind } from './notDoneText.js';

export type NotDoneMark = 'ND' | 'UNK' | 'NA';
type TableRows = Record<string, string>[];

/** A form instance's content as stored: canonical strings, not-done marks, table rows. */
export interface RecordContent {
  values: Record<string, string>;
  notDone: Record<string, NotDoneMark>;
  tables: Record<string, TableRows>;
}

/**
 * Every code of a field issue in a per-record result, besides `edit_check:<check code>` (whose text
 * the design gives): the message catalogues hold an English and a Russian text for each.
 */
export const FIELD_ISSUE_CODES = [
  'unknown_field', 'table_in_values', 'not_a_table', 'value_and_mark', 'required', 'out_of_range',
  'invalid_format', 'too_many_decimals', 'not_an_option', 'too_long', 'invalid_character', 'outside_visit_window',
] as const satisfies readonly string[];

export type FieldIssueCode = (typeof FIELD_ISSUE_CODES)[number] | `edit_check:${string}`;

/** A problem with one field of a record; `field` is `code` or `<table>[<row>].<column>`. */
export interface FieldIssue {
  field: string;
  code: FieldIssueCode;
  params?: Record<string, unknown>;
}

export interface SentContent {
  values?: Record<string, string>;
  not_done?: Record<string, NotDoneMark>;
  tables?: Record<string, Record<string, string>[]>;
}

export const EMPTY_CONTENT: RecordContent = { values: {}, notDone: {}, tables: {} };

/**
 * Applies what a request sends onto what is saved (nothing, for a new record). A value replaces the
 * saved value, `""` empties it, a mark replaces the value, and a table is replaced as a whole. Every
 * value is converted by its field's type; unknown codes and bad values are issues.
 */
export function mergeContent(form: FormDef, saved: RecordContent, sent: SentContent): { content: RecordContent; issues: FieldIssue[] } {
  const fields = new Map(form.fields.map((f) => [f.code, f]));
  const issues: FieldIssue[] = [];
  const values = { ...saved.values };
  const notDone = { ...saved.notDone };
  const tables = { ...saved.tables };
  for (const [code, raw] of Object.entries(sent.values ?? {})) {
    const field = fields.get(code);
    if (!field) { issues.push({ field: code, code: 'unknown_field' }); continue; }
    if (field.type === 'table') { issues.push({ field: code, code: 'table_in_values' }); continue; }
    if (sent.not_done?.[code] !== undefined && raw.trim() !== '') { issues.push({ field: code, code: 'value_and_mark' }); continue; }
    if (raw.trim() === '') { delete values[code]; continue; }
    const parsed = parseFieldValue(field, raw);
    if (!parsed.ok) { issues.push({ field: code, code: parsed.code, params: parsed.params }); continue; }
    values[code] = parsed.canonical;
    delete notDone[code];
  }
  for (const [code, mark] of Object.entries(sent.not_done ?? {})) {
    if (!fields.has(code)) { issues.push({ field: code, code: 'unknown_field' }); continue; }
    notDone[code] = mark;
    delete values[code];
    delete tables[code];
  }
  for (const [code, rows] of Object.entries(sent.tables ?? {})) {
    const field = fields.get(code);
    if (!field) { issues.push({ field: code, code: 'unknown_field' }); continue; }
    if (field.type !== 'table') { issues.push({ field: code, code: 'not_a_table' }); continue; }
    if (sent.not_done?.[code] !== undefined && rows.length > 0) { issues.push({ field: code, code: 'value_and_mark' }); continue; }
    const parsedRows = parseRows(field, rows, issues);
    if (parsedRows.length === 0) delete tables[code];
    else { tables[code] = parsedRows; delete notDone[code]; }
  }
  return { content: { values, notDone, tables }, issues };
}

const DATE_CELL_MARKS: ReadonlySet<string> = new Set<NotDoneMark>(['ND', 'UNK', 'NA']);

function parseRows(table: TableFieldDef, rows: Record<string, string>[], issues: FieldIssue[]): TableRows {
  const columns = new Map<string, ColumnDef>(table.columns.map((c) => [c.code, c]));
  return rows.map((row, index) => {
    const out: Record<string, string> = {};
    for (const [code, raw] of Object.entries(row)) {
      const where = `${table.code}[${index}].${code}`;
      const column = columns.get(code);
      if (!column) { issues.push({ field: where, code: 'unknown_field' }); continue; }
      if (raw.trim() === '') continue;
      // A table has no `not_done` of its own, so a date cell carries its mark as its value (spec, "Study
      // design and field values"): an ended medication's unknown stop date is `UNK`, not empty.
      if (column.type === 'date' && DATE_CELL_MARKS.has(raw.trim())) { out[code] = raw.trim(); continue; }
      const parsed = parseFieldValue(column, raw);
      if (!parsed.ok) issues.push({ field: where, code: parsed.code, params: parsed.params });
      else out[code] = parsed.canonical;
    }
    return out;
  });
}

/**
 * A complete record leaves no required field empty unless it carries a not-done mark, and no
 * required column empty in any row of its tables. A draft may leave both empty (spec: "Send
 * `status: draft` to save an incomplete form").
 */
export function completenessIssues(form: FormDef, content: RecordContent): FieldIssue[] {
  const fields: FieldIssue[] = form.fields
    .filter((f) => f.required && content.values[f.code] === undefined && content.tables[f.code] === undefined && content.notDone[f.code] === undefined)
    .map((f) => ({ field: f.code, code: 'required' }));
  const cells = form.fields.flatMap((f) => f.type !== 'table' ? [] : (content.tables[f.code] ?? []).flatMap((row, index) =>
    f.columns.filter((c) => c.required && row[c.code] === undefined).map((c): FieldIssue => ({ field: `${f.code}[${index}].${c.code}`, code: 'required' }))));
  return [...fields, ...cells];
}

/** The record's values as typed data for edit checks: numbers, booleans, option lists; tables as row arrays. */
export function typedValues(form: FormDef, content: RecordContent): Record<string, unknown> {
  const typed: Record<string, unknown> = {};
  for (const field of form.fields) {
    if (field.type === 'table') {
      const rows = content.tables[field.code];
      if (rows) typed[field.code] = rows.map((row) => Object.fromEntries(field.columns.flatMap((c) => {
        const cell = row[c.code];
        return cell === undefined ? [] : [[c.code, typedOf(c, cell)]];
      })));
    } else {
      const value = content.values[field.code];
      if (value !== undefined) typed[field.code] = typedOf(field, value);
    }
  }
  return typed;
}

/**
 * The fields whose saved content the change alters or clears, as a reason for change is asked for: a
 * value or mark that was saved, and a table whose saved rows are not all kept, unchanged and first. An
 * empty place filled and rows added after the saved ones alter nothing that was saved.
 */
export function overwrittenFields(before: RecordContent, after: RecordContent): string[] {
  const rowsKept = (code: string) => (before.tables[code] ?? []).every((row, i) => sameRow(row, after.tables[code]?.[i]));
  return changedFields(before, after).map((c) => c.field).filter((code) =>
    before.values[code] !== undefined || before.notDone[code] !== undefined || !rowsKept(code));
}

/** A field whose stored content changed, with old and new as audit text. */
export interface ChangedField {
  field: string;
  oldValue: string | null;
  newValue: string | null;
  /**
   * For an old or new text written like a not-done mark (`[ND]`…), whether it is the mark or a field's
   * text: the audit row keeps this in its `details` (`old_value_kind`, `new_value_kind`), since the text
   * alone cannot say. Empty for every other change.
   */
  valueKinds: { old_value_kind?: AuditValueKind; new_value_kind?: AuditValueKind };
}

/**
 * The fields whose stored content differs between two versions. The entries themselves are compared, not
 * their audit text: a text value "[ND]" reads like the mark ND.
 */
export function changedFields(before: RecordContent, after: RecordContent): ChangedField[] {
  const codes = new Set([...Object.keys(before.values), ...Object.keys(after.values), ...Object.keys(before.notDone), ...Object.keys(after.notDone), ...Object.keys(before.tables), ...Object.keys(after.tables)]);
  return [...codes].sort().flatMap((field) => {
    const old = entryOf(before, field);
    const now = entryOf(after, field);
    if (sameEntry(old, now)) return [];
    const oldValue = auditText(old);
    const newValue = auditText(now);
    const oldKind = kindWhereAmbiguous(old, oldValue);
    const newKind = kindWhereAmbiguous(now, newValue);
    const valueKinds = { ...(oldKind && { old_value_kind: oldKind }), ...(newKind && { new_value_kind: newKind }) };
    return [{ field, oldValue, newValue, valueKinds }];
  });
}

/** What an entry whose audit text reads like a mark holds (the mark, or a text written so); undefined for any other. */
function kindWhereAmbiguous(entry: FieldEntry, text: string | null): AuditValueKind | undefined {
  if (text === null || !markWrittenIn(text)) return undefined;
  return entry?.kind === 'mark' ? 'not_done' : 'value';
}

/** What one field holds as stored; a merged record holds at most one of the three for a field. */
type FieldEntry = { kind: 'value'; value: string } | { kind: 'mark'; mark: NotDoneMark } | { kind: 'rows'; rows: TableRows } | null;

function entryOf(content: RecordContent, code: string): FieldEntry {
  const value = content.values[code];
  if (value !== undefined) return { kind: 'value', value };
  const mark = content.notDone[code];
  if (mark) return { kind: 'mark', mark };
  const rows = content.tables[code];
  return rows ? { kind: 'rows', rows } : null;
}

function sameEntry(a: FieldEntry, b: FieldEntry): boolean {
  if (a?.kind === 'value' && b?.kind === 'value') return a.value === b.value;
  if (a?.kind === 'mark' && b?.kind === 'mark') return a.mark === b.mark;
  if (a?.kind === 'rows' && b?.kind === 'rows') return a.rows.length === b.rows.length && a.rows.every((row, i) => sameRow(row, b.rows[i]));
  return a === null && b === null;
}

// Cell by cell: a row read back from jsonb has its keys in another order than the one sent.
function sameRow(a: Record<string, string>, b: Record<string, string> | undefined): boolean {
  return b !== undefined && Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);
}

/** The entry as the audit trail's old or new value keeps it: the value, `[ND]` for a mark, rows as JSON. */
function auditText(entry: FieldEntry): string | null {
  if (entry === null) return null;
  return entry.kind === 'value' ? entry.value : entry.kind === 'mark' ? markText(entry.mark) : JSON.stringify(entry.rows);
}
