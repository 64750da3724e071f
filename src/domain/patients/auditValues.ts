import type { FieldDef, FormDef } from '../studyDesign/types.js';
import { displayUnit } from '../studyDesign/displayUnit.js';
import { markWrittenIn, type AuditValueKind } from '../records/notDoneText.js';

/**
 * An old or new value of the audit trail as the patient card shows it. The trail keeps the stored text
 * (a choice's code, `[ND]` for a not-done mark, a table as JSON, a record status): the card shows a
 * choice with its label, a value with its unit, a mark or a status in words, a table row by row. A text
 * written like a mark is a mark unless its row says it is a field's text (`valueKinds` of a change);
 * rows written before rows said so hold it as a mark.
 */
export type AuditValueView =
  | { kind: 'text'; text: string }
  | { kind: 'notDone'; mark: string }
  | { kind: 'status'; status: string }
  | { kind: 'rows'; rows: string[] };

function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `name: value` pairs of a JSON object, the way a person reads a row; the text itself for anything else. */
function pairs(row: unknown, labels: Map<string, string> = new Map()): string {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return String(row);
  return Object.entries(row).map(([k, v]) => `${labels.get(k) ?? k}: ${v === null ? '—' : String(v)}`).join('; ');
}

function fieldText(field: FieldDef, text: string): string {
  if (field.type === 'choice') return `${text} — ${field.options.find((o) => o.code === text)?.label ?? '?'}`;
  if (field.type === 'multichoice') return text.split(',').map((code) => `${code} — ${field.options.find((o) => o.code === code)?.label ?? '?'}`).join('; ');
  if ('unit' in field && field.unit) return `${text} ${displayUnit(field.unit)}`;
  return text;
}

/**
 * One old or new value of an audit entry; null when there is none.
 *
 * @param kind - what the row's `details` say a text written like a mark holds (`old_value_kind`, `new_value_kind`)
 */
export function auditValueView(action: string, form: FormDef | undefined, fieldCode: string | null, text: string | null, kind?: AuditValueKind): AuditValueView | null {
  if (text === null || text === '') return null;
  if (action === 'record.status_changed') return { kind: 'status', status: text };
  const mark = kind === 'value' ? undefined : markWrittenIn(text);
  // Only a value entry holds a field's stored text; a query's entry holds its message.
  const field = action.startsWith('record.value_') ? form?.fields.find((f) => f.code === fieldCode) : undefined;
  if (mark !== undefined && field) return { kind: 'notDone', mark };
  if (field?.type === 'table') {
    const rows = parsedJson(text);
    if (Array.isArray(rows)) return { kind: 'rows', rows: rows.map((row) => pairs(row, new Map(field.columns.map((c) => [c.code, c.label])))) };
  }
  if (field) return { kind: 'text', text: fieldText(field, text) };
  // Values that are not a field's (a linked FHIR identity, a setting) are JSON objects or plain text.
  const parsed = text.startsWith('{') ? parsedJson(text) : undefined;
  return { kind: 'text', text: parsed === undefined ? text : pairs(parsed) };
}
