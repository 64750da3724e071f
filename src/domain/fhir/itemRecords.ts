/**
 * Between import items and saved records: what is saved at an item's place, and the records that save
 * chosen items through the one write path (`submitRecords`), for `mode=save` and for a confirmation on
 * the patient's card alike.
 */
import { markText, markWrittenIn } from '../records/notDoneText.js';
import type { RecordInput } from '../records/submitRecords.js';
import type { StoredRecord } from '../stores.js';
import { cellOf, tableOf } from './cellField.js';
import type { FhirImportItem } from './fhirImportItem.js';
import { itemAt } from './itemAt.js';
import type { SavedValue } from './mapToEcrf.js';

/** The saved form instance at a visit occurrence, if any. */
export type CurrentRecord = (visit: string, instance: number, form: string) => StoredRecord | undefined;

/**
 * The saved records of a patient by place, from their visit and form ids.
 *
 * @param visitIds - visit code → id; `formIds` form code → id (`StudyStore.designIds`)
 */
export function currentRecords(records: StoredRecord[], visitIds: Map<string, number>, formIds: Map<string, number>): CurrentRecord {
  const byPlace = new Map(records.map((r) => [`${r.visitId}|${r.instance}|${r.formId}`, r]));
  return (visit, instance, form) => byPlace.get(`${visitIds.get(visit)}|${instance}|${formIds.get(form)}`);
}

/**
 * What a record holds in a field (its value, or its not-done mark, written `[ND]`), or in the cell of a
 * table field (`field` = `<table>.<column>` with a row): the cell's text, or the table's mark when the
 * table carries one (a marked table holds no rows, and its mark stands for every cell); null when empty.
 */
export function savedValueAt(record: StoredRecord | undefined, field: string, row: number | null): SavedValue | null {
  if (!record) return null;
  const markOf = (code: string): SavedValue | null => {
    const mark = record.notDone[code];
    return mark ? { text: markText(mark), notDone: true } : null;
  };
  if (row !== null) {
    const { table, column } = cellOf(field);
    return markOf(table) ?? textOnly(emptyToNull(record.tables[table]?.[row]?.[column]));
  }
  return textOnly(emptyToNull(record.values[field])) ?? markOf(field);
}

/** The table an item's cell belongs to, at its visit occurrence and form. */
export function tableKeyOf(item: Pick<FhirImportItem, 'visit' | 'instance' | 'form' | 'field'>): string {
  return `${item.visit}|${item.instance ?? 1}|${item.form}|${item.field === null ? '' : tableOf(item.field)}`;
}

/** The table row an item's cell belongs to: its table (`tableKeyOf`) and row. */
export function rowKeyOf(item: Pick<FhirImportItem, 'visit' | 'instance' | 'form' | 'field' | 'row'>): string {
  return `${tableKeyOf(item)}|${item.row}`;
}

/**
 * The items, of those at `positions`, whose place no longer holds what the import showed: a `new` place
 * filled since, a saved value changed since, or a cell of a table row whose matched cells changed (the row
 * is then no longer the one the file's row was matched to). A row the file adds goes after whatever rows
 * are saved by then, unless the table now carries a not-done mark (`NA`: no relevant history): a mark is no
 * empty place, and appending the row would silently take it away. A row shown against a table's mark (its
 * cells' saved value, see `savedValueAt`) is outdated once that mark changed or went away. The confirmation
 * refuses such items (importDecision.ts) and the review page shows them (fhirReviewPage.ts).
 */
export function outdatedPositions(items: readonly FhirImportItem[], positions: ReadonlySet<number>, current: CurrentRecord): number[] {
  const changed = (item: FhirImportItem) => savedAt(current(item.visit!, item.instance ?? 1, item.form!), item.field!, item.row) !== item.saved_value;
  const matched = items.filter((i) => i.row !== null && i.saved_value !== null && i.visit && i.form && i.field);
  const matchedRows = new Set(matched.map(rowKeyOf));
  const changedRows = new Set(matched.filter(changed).map(rowKeyOf));
  return [...positions].filter((position) => {
    const item = itemAt(items, position);
    if (item.row === null) return changed(item);
    if (!matchedRows.has(rowKeyOf(item))) return current(item.visit!, item.instance ?? 1, item.form!)?.notDone[tableOf(item.field!)] !== undefined;
    return changedRows.has(rowKeyOf(item)) || changed(item);
  }).sort((a, b) => a - b);
}

/**
 * The tables (`tableKeyOf`) the mapping found marked not done: a marked table holds no rows, so every
 * cell of the file's rows for it shows the same mark as its saved value (`fillTable` in mapToEcrf.ts).
 * Deciding by all the table's items, not one, keeps a saved cell whose text merely reads `[NA]` from
 * being taken for a mark.
 */
export function markedTables(items: readonly FhirImportItem[]): Set<string> {
  const shown = new Map<string, string | null>();
  for (const item of items) {
    if (item.row === null || item.field === null) continue;
    const key = tableKeyOf(item);
    const saved = item.saved_value !== null && markWrittenIn(item.saved_value) ? item.saved_value : null;
    shown.set(key, shown.has(key) && shown.get(key) !== saved ? null : saved);
  }
  return new Set([...shown].flatMap(([key, mark]) => (mark === null ? [] : [key])));
}

/** The text of what a place holds (`savedValueAt`), as an item's `saved_value` shows it. */
export function savedAt(record: StoredRecord | undefined, field: string, row: number | null): string | null {
  return savedValueAt(record, field, row)?.text ?? null;
}

/** The value look-up the mapping asks for, with cells as `<table>[<row>].<column>`. */
export function savedLookup(current: CurrentRecord) {
  return (visit: string, instance: number, form: string, field: string): SavedValue | null => {
    const cell = /^(\w+)\[(\d+)\]\.(\w+)$/.exec(field);
    return cell ? savedValueAt(current(visit, instance, form), `${cell[1]}.${cell[3]}`, Number(cell[2])) : savedValueAt(current(visit, instance, form), field, null);
  };
}

function textOnly(text: string | null): SavedValue | null {
  return text === null ? null : { text, notDone: false };
}

function emptyToNull(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}

/** One record to submit, the positions of the items it saves, and the table row each table item lands in. */
export interface ItemRecord {
  input: RecordInput;
  positions: number[];
  rows: Map<number, number>;
}

/**
 * The records that save the chosen items, one per visit occurrence and form. A plain item sets its
 * field. Tables are sent whole (the records call replaces a table as a whole), so each starts from the
 * saved rows: an item on a row that matched a saved row (one of whose cells the mapping found saved)
 * sets its cell in that row, and a row of the file that matched none is appended after the saved rows,
 * in the file's order, with only its chosen cells. A table marked not done has no saved rows: its chosen
 * rows are sent as the table, and the records path then takes the mark away (an audited change from the
 * mark to the rows). The record keeps its saved status; a new one is a
 * draft, since a FHIR file seldom fills every required field.
 *
 * @param items - every item of the import, so that rows matched to saved rows are recognised
 * @param chosen - the positions of the items to save
 */
export function itemRecords(subject: string, items: readonly FhirImportItem[], chosen: ReadonlySet<number>, current: CurrentRecord): ItemRecord[] {
  const placeOf = (item: FhirImportItem) => `${item.visit}|${item.instance ?? 1}|${item.form}`;
  const matchedRows = new Set(items.filter((i) => i.row !== null && i.saved_value !== null).map((i) => `${placeOf(i)}|${tableOf(i.field!)}|${i.row}`));
  const groups = new Map<string, ItemRecord & { appended: Map<string, number> }>();
  items.forEach((item, position) => {
    if (!chosen.has(position) || !item.visit || !item.form || !item.field || item.value === null) return;
    const instance = item.instance ?? 1;
    let group = groups.get(placeOf(item));
    if (!group) {
      const saved = current(item.visit, instance, item.form);
      group = {
        input: { subject, visit: item.visit, form: item.form, instance, values: {}, tables: {}, status: saved?.status ?? 'draft', update: true },
        positions: [],
        rows: new Map(),
        appended: new Map(),
      };
      groups.set(placeOf(item), group);
    }
    group.positions.push(position);
    if (item.row === null) {
      group.input.values![item.field] = item.value;
      return;
    }
    const { table, column } = cellOf(item.field);
    const tables = group.input.tables!;
    const rows = (tables[table] ??= (current(item.visit, instance, item.form)?.tables[table] ?? []).map((row) => ({ ...row })));
    let row = item.row;
    // A matched row that is no longer there (the table changed since the mapping) is a row of its own.
    let cells = matchedRows.has(`${placeOf(item)}|${table}|${item.row}`) ? rows[item.row] : undefined;
    if (!cells) {
      const key = `${table}|${item.row}`;
      if (!group.appended.has(key)) {
        group.appended.set(key, rows.length);
        rows.push({});
      }
      row = group.appended.get(key)!;
      cells = rows[row]!; // appended above, or by an earlier item of the same row
    }
    cells[column] = item.value;
    group.rows.set(position, row);
  });
  return [...groups.values()].map(({ input, positions, rows }) => ({ input, positions, rows }));
}
