/// <reference types="fhir" />
/**
 * Maps an imported FHIR record onto the study's eCRF through the design's `fhir_mapping` (spec,
 * `importFhirRecord`): one item per value found, each with its place (visit, form, field, row), its
 * value in the field's unit and its state against what is already saved there.
 *
 * Which values become items. Every value of an Observation (its own value[x] and each component's) and
 * every Condition, MedicationRequest and MedicationStatement is "a value found in the file", so each
 * gets an item, skipped with reason `no_mapping` when the study has no place for it. Other resources
 * (Encounter, Claim, ExplanationOfBenefit, Immunization, DiagnosticReport…) carry nothing the mapping
 * can take and give no item. Absent values give none either: an Observation without value[x] (a panel
 * with `hasMember`, a blood-pressure panel whose values are in components), a value with
 * `dataAbsentReason`, a cancelled or entered-in-error Observation, an entered-in-error or refuted
 * Condition, a medication that was never taken. Listing the unmapped values keeps `counts` equal to
 * the items by state, as the spec defines them, and lets the site see why a value was not imported. It
 * costs about 450 bytes of JSON per item: 0.28 MB for the largest Synthea fixture (3.8 MB, 620 items;
 * its Claim and ExplanationOfBenefit bytes give none) and 0.41 MB for the one with most Observations
 * (3.5 MB, 969 items).
 *
 * Competing values. When several values fall on one place (same visit, form and field), the mapping's
 * `pick` chooses one; the chosen item lists all of them in `candidates` (itself first, the others in
 * time order) with `chosen_by`, and a value that was chosen nowhere gets one item skipped with reason
 * `not_chosen` and no place, as in the spec's example. When the rule ranks different values equally
 * (two creatinine results at the same instant), choosing the first in the file would decide silently
 * what a reviewer must decide: the place is a tie, one item at the place (on the first tied value) with
 * no value, `tie: true` and the tied values as `candidates`, skipped so that `mode=save` saves nothing
 * for it and the review page asks the site team to pick.
 *
 * Measurement dates. A mapping with a `date_field` also fills that date field of its form with the
 * calendar day (in the sender's time zone) of the Observation chosen for its field, so that values such
 * as vital signs arrive with the date they were measured (the demo's `vsdate`, which its edit check
 * `vsdate_with_values` requires). The date is an item of its own, compared with the saved date like any
 * value, on the chosen Observation. When the values placed on one form at one visit were measured on
 * different days, the day nearest to the visit's planned day is taken (`chosen_by` `nearest`) and every
 * Observation placed there is listed in `candidates` with its day.
 *
 * Table fields (conditions, medications): one row per resource and one item per filled cell, with
 * `field` = `<table>.<column>` and `row` = the row index. History from before enrolment (by onset or
 * start date) goes to the first visit having the table's form (screening in the demo study), anything
 * later to the earliest visit having the form whose window ends on or after its date, not to the visit
 * whose window holds the date (a medication started on day 51 goes to week 12 in the demo study), and
 * what starts after the last such window has no visit (`slotRecording` in `visitWindows.ts`). A
 * condition with onset after the enrolment day is never medical history: it goes only to its mapping's
 * `onset_after_enrolment` table, as an adverse-event candidate that `mode=save` does not save. An
 * imported row that matches a saved row of that table (same code, else same display, ignoring case)
 * takes that row's index and is compared with it cell by cell; any other row is appended after the
 * saved rows and is `new`. A table marked not done holds no rows: every cell of the file's rows is a
 * `conflict` with the mark (`saved_value` `[NA]`), numbered from 0.
 */
import type {
  ColumnDef,
  ConditionMapping,
  FieldDef,
  FormDef,
  ObservationMapping,
  ObservationPick,
  StudyDesign,
  TableFieldDef,
  TableMapping,
} from '../studyDesign/types.js';
import { entryReference, toEntries, type FhirEntry, type FhirInput } from './fhirEntry.js';
import { dayNumber, instantOf, localDate, normaliseEffective } from './fhirDates.js';
import { countItems, type FhirImportCounts, type FhirImportItem, type ItemCoding, type SkipReason } from './fhirImportItem.js';
import { indexEntries } from './fhirReferences.js';
import { toCellValue, toFieldValue } from './fieldValues.js';
import { HISTORY_TYPES, historyRow, type HistoryRow, type HistorySource } from './historyRows.js';
import { observedValues, originalOf, type ObservedValue } from './observationValues.js';
import { slotContaining, slotRecording, visitSlots, type VisitSlot } from './visitWindows.js';

/**
 * What a place holds: its text as an item's `saved_value` shows it (`[ND]` for a not-done mark), and
 * whether that text is a mark. A value from a file is never a mark, so it is never `same` as one, even
 * where the file's text reads `[ND]`.
 */
export interface SavedValue {
  text: string;
  notDone: boolean;
}

/**
 * The value saved at a place, or null/undefined when the place is empty. A table cell is asked for
 * with `field` = `<table>[<row>].<column>` (0-based row), the notation the records call uses for cells.
 */
type SavedValueLookup = (visit: string, instance: number, form: string, field: string) => SavedValue | null | undefined;

/** What the mapping needs to know about the patient besides the file. */
export interface MappingContext {
  /** The enrolment date (day 0 of the visit schedule), `YYYY-MM-DD`. */
  enrolledOn: string;
  /** Visit code → the date already recorded for that visit, `YYYY-MM-DD`; its window is centred there. */
  recordedVisitDates?: Record<string, string>;
  saved: SavedValueLookup;
}

export interface MappingResult {
  items: FhirImportItem[];
  /** `saved` is always 0 here: `mode=save` fills it. */
  counts: FhirImportCounts;
}

/**
 * The resource types the mapping takes values from. The identity check refuses one of them whose subject
 * is not a Patient (`checkPatientIdentity`), since its values would land in the patient's eCRF.
 */
export const MAPPED_TYPES: ReadonlySet<string> = new Set(['Observation', ...HISTORY_TYPES]);

/** The visit instance of every automatically placed value: only non-repeating visits receive values. */
const INSTANCE = 1;
/** A table has at most 200 rows (spec, `tables` of a record), which bounds the look-up of saved rows. */
const MAX_TABLE_ROWS = 200;

/** What every item of one value shares. */
interface ItemBase {
  resource: string;
  code: ItemCoding;
  original: { value: string; unit: string | null };
  effective: string | null;
}

interface Candidate {
  kind: 'candidate';
  item: FhirImportItem;
  /** The value the candidate belongs to: its measurement date, if any, joins that value's items. */
  record: ValueRecord;
  number: number | null;
  /** The measurement day, `YYYY-MM-DD` in the sender's time zone, and as days since 1970. */
  date: string;
  day: number;
  instant: number;
  order: number;
  won: boolean;
  /** The first of the values the rule could not choose between: it carries the place's tie item. */
  tie: boolean;
}

type Part = { kind: 'item'; item: FhirImportItem } | Candidate | { kind: 'row'; items: FhirImportItem[] };

/** One value of the file and the items it has produced so far. */
interface ValueRecord {
  base: ItemBase;
  /** The effective time as the resource gives it (the `original` of a measurement-date item). */
  effective: string | null;
  /** Whether any mapping names the value's code. */
  mapped: boolean;
  parts: Part[];
}

interface Place {
  slot: VisitSlot;
  form: string;
  field: ColumnDef;
  pick: ObservationPick;
  /** The form's date field that receives the chosen value's measurement date (the first mapping's). */
  dateField: string | null;
  candidates: Candidate[];
}

interface PlacedRow {
  row: HistoryRow;
  mapping: TableMapping<HistorySource>;
  part: { kind: 'row'; items: FhirImportItem[] };
  base: ItemBase;
}

interface TableGroup {
  slot: VisitSlot;
  form: string;
  table: TableFieldDef;
  rows: PlacedRow[];
}

/**
 * Maps the file's values onto the eCRF.
 *
 * @param resources - the file's entries from `entriesOfJson` or `parseNdjsonEntries` (or bare resources, when no reference
 *   needs a Bundle fullUrl), already validated and identity-checked
 * @param design - the study design; pass the design as the key sees it, so that places on forms the key
 *   may not see come out as `no_mapping`
 */
export function mapToEcrf(resources: FhirInput, design: StudyDesign, context: MappingContext): MappingResult {
  const entries = toEntries(resources);
  const index = indexEntries(entries);
  const slots = visitSlots(design, context.enrolledOn, context.recordedVisitDates);
  const enrolmentDay = dayNumber(context.enrolledOn) ?? 0;
  const forms = new Map(design.forms.map((form) => [form.code, form]));
  const byCode = observationMappingsByCode(design.fhir_mapping.observations);
  const places = new Map<string, Place>();
  const tables = new Map<string, TableGroup>();
  const records: ValueRecord[] = [];
  let order = 0;

  for (const entry of entries) {
    const { resource } = entry;
    if (resource.resourceType === 'Observation') {
      const observation = resource as fhir4.Observation;
      const effective = observationEffective(observation);
      for (const value of observedValues(observation)) {
        records.push(observationRecord(entry, value, effective));
      }
    } else if (HISTORY_TYPES.has(resource.resourceType)) {
      const record = historyRecord(entry);
      if (record) records.push(record);
    }
  }

  function observationRecord(entry: FhirEntry, value: ObservedValue, effective: string | null): ValueRecord {
    // A mapping whose form is not in the design given (a form the key may not see) is no place.
    const matches = matchingMappings(value, byCode).filter(({ mapping }) => fieldOf(forms.get(mapping.form), mapping.field));
    const coding = matches[0]?.coding ?? value.codings.find((c) => c.code);
    const base: ItemBase = {
      resource: entryReference(entry),
      code: coding
        ? { system: coding.system ?? '', code: coding.code ?? '', display: coding.display ?? null }
        : { system: '', code: '', display: value.text },
      original: originalOf(value.value),
      effective: effective === null ? null : normaliseEffective(effective),
    };
    const record: ValueRecord = { base, effective, mapped: matches.length > 0, parts: [] };
    const date = localDate(effective);
    const day = date === null ? null : dayNumber(date);
    if (date === null || day === null) return record;
    // A date-only or unparsable effective orders as the start of its day.
    const instant = (effective === null ? null : instantOf(effective)) ?? instantOf(date) ?? 0;
    const seen = new Set<string>();
    for (const { mapping } of matches) {
      const field = fieldOf(forms.get(mapping.form), mapping.field);
      const slot = slotContaining(slots, day, mapping.form);
      if (!field || field.type === 'table' || !slot) continue;
      const key = placeKey(slot, mapping.form, field.code);
      if (seen.has(key)) continue;
      seen.add(key);
      const placed = { ...placeOf(slot, mapping.form, field.code), unit: unitOf(field) };
      const converted = toFieldValue(value.value, field, mapping.molar_mass);
      if (!converted.ok) {
        record.parts.push({ kind: 'item', item: skippedAt(base, placed, converted.reason, savedAt(slot, mapping.form, field.code)?.text ?? null) });
        continue;
      }
      const candidate: Candidate = {
        kind: 'candidate',
        item: makeItem(base, { ...placed, value: converted.value, state: 'new' }),
        record,
        number: converted.number,
        date,
        day,
        instant,
        order: order++,
        won: false,
        tie: false,
      };
      let place = places.get(key);
      if (!place) {
        place = { slot, form: mapping.form, field, pick: mapping.pick, dateField: mapping.date_field ?? null, candidates: [] };
        places.set(key, place);
      }
      place.candidates.push(candidate);
      record.parts.push(candidate);
    }
    return record;
  }

  function historyRecord(entry: FhirEntry): ValueRecord | null {
    const { resource } = entry;
    const mappings = (
      (resource.resourceType === 'Condition' ? design.fhir_mapping.conditions : design.fhir_mapping.medications) as TableMapping<HistorySource>[]
    ).filter((mapping) => fieldOf(forms.get(mapping.form), mapping.field)?.type === 'table');
    // Read once without preferred systems for the item's coding when no mapping places the resource.
    const plain = historyRow(resource, [], index);
    if (!plain) return null;
    const date = plain.date;
    const base: ItemBase = {
      resource: entryReference(entry),
      code: plain.coding,
      original: { value: String(plain.sources.display?.value ?? plain.coding.code), unit: null },
      effective: date ? normaliseEffective(date) : null,
    };
    const record: ValueRecord = { base, effective: date, mapped: mappings.length > 0, parts: [] };
    const localDay = localDate(date);
    const day = localDay === null ? null : dayNumber(localDay);
    const onsetDate = plain.sources.onset?.isDate ? localDate(String(plain.sources.onset.value)) : null;
    const onsetDay = onsetDate === null ? null : dayNumber(onsetDate);
    // A condition that began after the enrolment day is not medical history: only an adverse-event
    // candidate. Any other condition (one present at enrolment, or undated) is history, at the first visit
    // having the history form.
    const isCondition = resource.resourceType === 'Condition';
    const afterEnrolment = isCondition && onsetDay !== null && onsetDay > enrolmentDay;
    const targets = afterEnrolment
      ? mappings.flatMap((mapping) => {
        const candidate = (mapping as ConditionMapping).onset_after_enrolment;
        return candidate && fieldOf(forms.get(candidate.form), candidate.field)?.type === 'table' ? [{ systems: mapping.systems, ...candidate }] : [];
      })
      : mappings;
    for (const mapping of targets) {
      const table = fieldOf(forms.get(mapping.form), mapping.field);
      const slot = slotRecording(slots, isCondition && !afterEnrolment ? null : day, mapping.form, enrolmentDay);
      const row = historyRow(resource, mapping.systems, index);
      if (!table || table.type !== 'table' || !slot || !row) continue;
      const key = placeKey(slot, mapping.form, table.code);
      let group = tables.get(key);
      if (!group) {
        group = { slot, form: mapping.form, table, rows: [] };
        tables.set(key, group);
      }
      const part = { kind: 'row' as const, items: [] as FhirImportItem[] };
      group.rows.push({ row, mapping, part, base: { ...base, code: row.coding } });
      record.parts.push(part);
    }
    return record;
  }

  function savedAt(slot: VisitSlot, form: string, field: string): SavedValue | null {
    const saved = context.saved(slot.visit.code, INSTANCE, form, field);
    return saved === undefined || saved === null || saved.text === '' ? null : saved;
  }

  for (const place of places.values()) choose(place, savedAt);
  fillMeasurementDates([...places.values()], forms, savedAt);
  for (const group of tables.values()) fillTable(group, savedAt);

  const items: FhirImportItem[] = [];
  for (const record of records) items.push(...finalItems(record));
  return { items, counts: countItems(items) };
}

function observationMappingsByCode(mappings: ObservationMapping[]): Map<string, ObservationMapping[]> {
  const byCode = new Map<string, ObservationMapping[]>();
  for (const mapping of mappings) {
    for (const { system, code } of mapping.codes) {
      const key = `${system}|${code}`;
      byCode.set(key, [...(byCode.get(key) ?? []), mapping]);
    }
  }
  return byCode;
}

/** The mappings a value's codings name (system and code; never the display), in design order. */
function matchingMappings(
  value: ObservedValue,
  byCode: Map<string, ObservationMapping[]>,
): { mapping: ObservationMapping; coding: fhir4.Coding }[] {
  const found: { mapping: ObservationMapping; coding: fhir4.Coding }[] = [];
  for (const coding of value.codings) {
    for (const mapping of byCode.get(`${coding.system}|${coding.code}`) ?? []) {
      if (!found.some((f) => f.mapping === mapping)) found.push({ mapping, coding });
    }
  }
  return found;
}

/**
 * When the observation was made: effective[x] (dateTime, instant, or the period's start), else the
 * time the result was issued.
 */
function observationEffective(observation: fhir4.Observation): string | null {
  return (
    observation.effectiveDateTime ??
    observation.effectiveInstant ??
    observation.effectivePeriod?.start ??
    observation.effectivePeriod?.end ??
    observation.issued ??
    null
  );
}

function fieldOf(form: FormDef | undefined, code: string): FieldDef | undefined {
  return form?.fields.find((f) => f.code === code);
}

function unitOf(field: ColumnDef): string | null {
  return (field.type === 'integer' || field.type === 'decimal') && field.unit ? field.unit : null;
}

function placeKey(slot: VisitSlot, form: string, field: string): string {
  return `${slot.visit.code}\u0000${form}\u0000${field}`;
}

function placeOf(slot: VisitSlot, form: string, field: string) {
  return { form, field, visit: slot.visit.code, instance: INSTANCE };
}

function makeItem(base: ItemBase, over: Partial<FhirImportItem>): FhirImportItem {
  return {
    resource: base.resource,
    code: base.code,
    form: null,
    field: null,
    row: null,
    visit: null,
    instance: null,
    value: null,
    unit: null,
    original: base.original,
    effective: base.effective,
    saved_value: null,
    state: 'skipped',
    reason: null,
    chosen_by: null,
    candidates: [],
    ...over,
  };
}

/** A value that has a place but cannot fill it: the place is shown, the value is not. */
function skippedAt(base: ItemBase, place: Partial<FhirImportItem>, reason: SkipReason, saved: string | null): FhirImportItem {
  return makeItem(base, { ...place, saved_value: saved, state: 'skipped', reason });
}

/** `same` compares numbers numerically (`81.20` equals `81.2`) and everything else as written. */
function stateOf(value: string, saved: SavedValue | null, numeric: boolean): 'new' | 'same' | 'conflict' {
  if (saved === null) return 'new';
  if (saved.notDone) return 'conflict';
  if (numeric) {
    const a = Number(value);
    const b = Number(saved.text.trim());
    if (Number.isFinite(a) && Number.isFinite(b) && saved.text.trim() !== '') return a === b ? 'same' : 'conflict';
  }
  return saved.text === value ? 'same' : 'conflict';
}

/**
 * Picks the place's value by the mapping's rule and sets the chosen item's state against the saved value;
 * or, when the best-ranked values differ, makes the place a tie.
 */
function choose(place: Place, savedAt: (slot: VisitSlot, form: string, field: string) => SavedValue | null): void {
  const { candidates } = place;
  const [first, ...rest] = candidates;
  if (!first) return; // a place is made for its first candidate, which is pushed at once
  let winner = first;
  for (const candidate of rest) {
    if (compareRanks(rank(candidate, place), rank(winner, place)) < 0) winner = candidate;
  }
  const saved = savedAt(place.slot, place.form, place.field.code);
  const tied = candidates.filter((c) => compareRanks(rank(c, place), rank(winner, place)) === 0);
  if (new Set(tied.map((c) => c.number ?? c.item.value)).size > 1) {
    winner.tie = true;
    Object.assign(winner.item, {
      value: null,
      saved_value: saved?.text ?? null,
      state: 'skipped',
      reason: 'not_chosen',
      tie: true,
      candidates: tied.map((c) => ({ resource: c.item.resource, value: c.item.value ?? '', effective: c.item.effective })),
    });
    return;
  }
  winner.won = true;
  const item = winner.item;
  if (candidates.length > 1) {
    item.chosen_by = place.pick;
    const others = candidates.filter((c) => c !== winner).sort((a, b) => a.instant - b.instant || a.order - b.order);
    item.candidates = [winner, ...others].map((c) => ({ resource: c.item.resource, value: c.item.value ?? '', effective: c.item.effective }));
  }
  item.saved_value = saved?.text ?? null;
  item.state = stateOf(item.value ?? '', saved, place.field.type === 'integer' || place.field.type === 'decimal');
}

/**
 * Gives each form with a `date_field` at each visit one item for that date field: the day of the chosen
 * value measured nearest to the visit's planned day (ties: the later measurement, then file order).
 */
function fillMeasurementDates(
  places: Place[],
  forms: Map<string, FormDef>,
  savedAt: (slot: VisitSlot, form: string, field: string) => SavedValue | null,
): void {
  const groups = new Map<string, { slot: VisitSlot; form: string; field: string; winners: Candidate[] }>();
  for (const place of places) {
    // A tie's values were measured at the same instant, so its first value gives the day as well.
    const winner = place.candidates.find((c) => c.won || c.tie);
    if (!place.dateField || !winner || fieldOf(forms.get(place.form), place.dateField)?.type !== 'date') continue;
    const key = placeKey(place.slot, place.form, place.dateField);
    let group = groups.get(key);
    if (!group) {
      group = { slot: place.slot, form: place.form, field: place.dateField, winners: [] };
      groups.set(key, group);
    }
    // Systolic and diastolic pressure are two places won by one Observation: it counts once.
    if (!group.winners.some((w) => w.item.resource === winner.item.resource)) group.winners.push(winner);
  }
  for (const { slot, form, field, winners } of groups.values()) {
    const byRank = (c: Candidate) => [Math.abs(c.day - slot.target), -c.instant, c.order];
    const chosen = winners.reduce((best, c) => (compareRanks(byRank(c), byRank(best)) < 0 ? c : best));
    const differ = winners.some((w) => w.date !== chosen.date);
    const others = winners.filter((w) => w !== chosen).sort((a, b) => a.instant - b.instant || a.order - b.order);
    const saved = savedAt(slot, form, field);
    const { base, effective } = chosen.record;
    chosen.record.parts.push({
      kind: 'item',
      item: makeItem({ ...base, original: { value: effective ?? chosen.date, unit: null } }, {
        ...placeOf(slot, form, field),
        value: chosen.date,
        saved_value: saved?.text ?? null,
        state: stateOf(chosen.date, saved, false),
        chosen_by: differ ? 'nearest' : null,
        candidates: differ ? [chosen, ...others].map((c) => ({ resource: c.item.resource, value: c.date, effective: c.item.effective })) : [],
      }),
    });
  }
}

/**
 * A candidate's rank under the place's rule; lower is better. Equal ranks with different values are a
 * tie (see `choose`); with equal values the file's order decides, which changes nothing.
 * `nearest` counts whole days from the visit's target day and prefers the later measurement between
 * days equally far. `min` and `max` fall back to `nearest` for a field that holds no number.
 */
function rank(candidate: Candidate, place: Place): number[] {
  const nearest = [Math.abs(candidate.day - place.slot.target), -candidate.instant];
  switch (place.pick) {
    case 'first':
      return [candidate.instant];
    case 'last':
      return [-candidate.instant];
    case 'min':
      return candidate.number === null ? nearest : [candidate.number];
    case 'max':
      return candidate.number === null ? nearest : [-candidate.number];
    case 'nearest':
      return nearest;
  }
}

function compareRanks(a: number[], b: number[]): number {
  for (const [i, x] of a.entries()) {
    const y = b[i] ?? 0;
    if (x !== y) return x - y;
  }
  return 0;
}

/**
 * Numbers the group's rows (matching saved rows or appending after them) and makes one item per cell. A
 * table the site marked not done (`NA`: no relevant history) holds no rows but is no empty place: each
 * cell of the file's rows is a `conflict` with that mark, shown as its saved value, so that only the
 * site's explicit choice replaces the mark with rows.
 */
function fillTable(group: TableGroup, savedAt: (slot: VisitSlot, form: string, field: string) => SavedValue | null): void {
  const { slot, form, table } = group;
  const columns = [...new Set(group.rows.flatMap((r) => Object.keys(r.mapping.columns)))];
  const marked = savedAt(slot, form, table.code);
  const mark = marked?.notDone ? marked : null;
  const cell = (row: number, column: string) => savedAt(slot, form, `${table.code}[${row}].${column}`)?.text ?? null;
  const savedRows: Record<string, string | null>[] = [];
  for (let row = 0; row < MAX_TABLE_ROWS && !mark; row++) {
    const values = Object.fromEntries(columns.map((column) => [column, cell(row, column)]));
    if (Object.values(values).every((v) => v === null)) break;
    savedRows.push(values);
  }
  const taken = new Set<number>();
  let appended = savedRows.length;
  for (const placed of group.rows) {
    const match = matchingSavedRow(placed, savedRows, taken);
    const rowIndex = match ?? appended++;
    if (match !== null) taken.add(match);
    for (const [column, source] of Object.entries(placed.mapping.columns)) {
      const sourceValue = placed.row.sources[source];
      const columnDef = table.columns.find((c) => c.code === column);
      if (!sourceValue || !columnDef) continue;
      const original = { value: typeof sourceValue.value === 'boolean' ? String(sourceValue.value) : sourceValue.value, unit: null };
      const base = { ...placed.base, original };
      const place = { form, field: `${table.code}.${column}`, row: rowIndex, visit: slot.visit.code, instance: INSTANCE, unit: unitOf(columnDef) };
      const savedCell = match === null ? null : savedRows[match]?.[column] ?? null;
      // A cell holds text only; a table's mark stands for every cell of it.
      const saved: SavedValue | null = mark ?? (savedCell === null ? null : { text: savedCell, notDone: false });
      const converted = toCellValue(sourceValue.value, columnDef, sourceValue.isDate, sourceValue.mark);
      if (!converted.ok) {
        placed.part.items.push(skippedAt(base, place, converted.reason, saved?.text ?? null));
        continue;
      }
      const numeric = columnDef.type === 'integer' || columnDef.type === 'decimal';
      const state = stateOf(converted.value, saved, numeric);
      placed.part.items.push(makeItem(base, { ...place, value: converted.value, saved_value: saved?.text ?? null, state }));
    }
  }
}

/** The saved row the imported row repeats: the same code, else the same display (ignoring case). */
function matchingSavedRow(placed: PlacedRow, savedRows: Record<string, string | null>[], taken: Set<number>): number | null {
  for (const source of ['code', 'display'] as const) {
    const column = Object.keys(placed.mapping.columns).find((c) => placed.mapping.columns[c] === source);
    const value = placed.row.sources[source]?.value;
    if (!column || typeof value !== 'string') continue;
    const wanted = value.trim().toLowerCase();
    const found = savedRows.findIndex((row, i) => !taken.has(i) && row[column]?.trim().toLowerCase() === wanted);
    if (found >= 0) return found;
  }
  return null;
}

/** The record's items in file order; a value left with none gets one skipped item saying why. */
function finalItems(record: ValueRecord): FhirImportItem[] {
  const items: FhirImportItem[] = [];
  let lost = false;
  for (const part of record.parts) {
    if (part.kind === 'item') items.push(part.item);
    else if (part.kind === 'row') items.push(...part.items);
    else if (part.won || part.tie) items.push(part.item);
    else lost = true;
  }
  if (items.length > 0) return items;
  const reason: SkipReason = !record.mapped ? 'no_mapping' : lost ? 'not_chosen' : 'no_visit';
  return [makeItem(record.base, { state: 'skipped', reason })];
}
