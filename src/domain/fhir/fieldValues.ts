/// <reference types="fhir" />
/**
 * Turns a FHIR value into the string a field stores, written as the records call expects it (spec:
 * "Study design and field values"), or says why it cannot: `unit_not_convertible` or `invalid`.
 */
import type { ColumnDef } from '../studyDesign/types.js';
import { localDate } from './fhirDates.js';
import type { FhirValue } from './observationValues.js';
import { convertUnit, formatForField, roundForField } from './unitConversion.js';

/** A value a field can hold, with its number for numeric fields (for `min`/`max` picks and comparisons). */
export type FieldValue = { ok: true; value: string; number: number | null } | { ok: false; reason: 'unit_not_convertible' | 'invalid' };

const SNOMED = 'http://snomed.info/sct';
const V2_YES_NO = 'http://terminology.hl7.org/CodeSystem/v2-0136';
/** The records call's limit for a text value. */
const MAX_TEXT = 4000;

const invalid: FieldValue = { ok: false, reason: 'invalid' };

/**
 * Converts an Observation value for a field.
 *
 * - integer/decimal: a Quantity converted into the field's unit (UCUM; `molarMass` allows mg/dL ↔
 *   mmol/L) and rounded to the field's precision; an integer value only into a field without a unit.
 *   A Quantity with a comparator (`>60`) is `invalid`: the field cannot say "more than".
 * - text: a string as is; a concept's text or display; a quantity as `<value> <unit>`; a boolean as yes/no.
 * - choice/multichoice: a concept whose coding's code, or a string or integer that equals an option code.
 * - yesno: a boolean; a string yes/no/true/false; a concept coded SNOMED CT 373066001/373067005 or
 *   HL7 v2-0136 Y/N.
 * - date: a full date of a dateTime (in the sender's time zone); time: the HH:MM of a time or dateTime.
 * Anything else is `invalid`.
 */
export function toFieldValue(value: FhirValue, field: ColumnDef, molarMass?: number): FieldValue {
  switch (field.type) {
    case 'integer':
    case 'decimal':
      return numericValue(value, field, molarMass);
    case 'text':
      return textValue(value);
    case 'choice':
    case 'multichoice':
      return choiceValue(value, field.options.map((o) => o.code));
    case 'yesno':
      return yesNoValue(value);
    case 'date': {
      const date = value.kind === 'dateTime' || value.kind === 'string' ? localDate(value.text) : null;
      return date ? ok(date) : invalid;
    }
    case 'time':
      return timeValue(value);
  }
}

function numericValue(value: FhirValue, field: Extract<ColumnDef, { type: 'integer' | 'decimal' }>, molarMass?: number): FieldValue {
  let number: number | null = null;
  if (value.kind === 'quantity') {
    if (value.comparator) return invalid;
    if (!field.unit) {
      number = value.value;
    } else {
      if (!value.ucumUnit) return { ok: false, reason: 'unit_not_convertible' };
      number = convertUnit(value.value, value.ucumUnit, field.unit, molarMass);
      if (number === null || !Number.isFinite(number)) return { ok: false, reason: 'unit_not_convertible' };
    }
  } else if (value.kind === 'integer') {
    if (field.unit) return { ok: false, reason: 'unit_not_convertible' };
    number = value.value;
  } else {
    return invalid;
  }
  const rounded = roundForField(number, field);
  return { ok: true, value: formatForField(rounded, field), number: rounded };
}

function textValue(value: FhirValue): FieldValue {
  let text: string | null;
  switch (value.kind) {
    case 'string':
    case 'dateTime':
    case 'time':
      text = value.text;
      break;
    case 'concept':
      text = value.concept.text ?? value.concept.coding?.find((c) => c.display)?.display ?? value.concept.coding?.find((c) => c.code)?.code ?? null;
      break;
    case 'quantity': {
      const unit = value.unitText ?? value.ucumUnit;
      text = `${value.comparator ?? ''}${value.value}${unit ? ` ${unit}` : ''}`;
      break;
    }
    case 'boolean':
      text = value.value ? 'yes' : 'no';
      break;
    case 'integer':
      text = String(value.value);
      break;
    case 'unsupported':
      text = null;
  }
  return text !== null && text.trim() !== '' && text.length <= MAX_TEXT ? ok(text) : invalid;
}

function choiceValue(value: FhirValue, options: string[]): FieldValue {
  if (value.kind === 'concept') {
    const code = value.concept.coding?.find((c) => c.code !== undefined && options.includes(c.code))?.code;
    return code === undefined ? invalid : ok(code);
  }
  if (value.kind === 'string' && options.includes(value.text)) return ok(value.text);
  if (value.kind === 'integer' && options.includes(String(value.value))) return ok(String(value.value));
  return invalid;
}

function yesNoValue(value: FhirValue): FieldValue {
  if (value.kind === 'boolean') return ok(value.value ? 'yes' : 'no');
  if (value.kind === 'string') {
    const text = value.text.trim().toLowerCase();
    if (text === 'yes' || text === 'true') return ok('yes');
    if (text === 'no' || text === 'false') return ok('no');
    return invalid;
  }
  if (value.kind === 'concept') {
    for (const coding of value.concept.coding ?? []) {
      if (coding.system === SNOMED && coding.code === '373066001') return ok('yes');
      if (coding.system === SNOMED && coding.code === '373067005') return ok('no');
      if (coding.system === V2_YES_NO && coding.code === 'Y') return ok('yes');
      if (coding.system === V2_YES_NO && coding.code === 'N') return ok('no');
    }
  }
  return invalid;
}

function timeValue(value: FhirValue): FieldValue {
  if (value.kind === 'time') {
    const match = /^(\d{2}):(\d{2})/.exec(value.text);
    return match ? ok(`${match[1]}:${match[2]}`) : invalid;
  }
  if (value.kind === 'dateTime') {
    // The clock time as the sender wrote it, like the date: the hospital's local time.
    const match = /T(\d{2}):(\d{2})/.exec(value.text);
    return match ? ok(`${match[1]}:${match[2]}`) : invalid;
  }
  return invalid;
}

/**
 * Converts a table cell's source (a text, a FHIR date or dateTime, a yes/no flag, or the mark of an
 * unknown date) for its column: dates become `YYYY-MM-DD` for a date column (a partial date is `invalid`
 * there) and stay as written in a text column; a mark fills a date or text column as it is; a choice
 * column takes only an option code.
 */
export function toCellValue(source: string | boolean, column: ColumnDef, isDate: boolean, isMark = false): FieldValue {
  if (isMark && typeof source === 'string') return column.type === 'date' || column.type === 'text' ? ok(source) : invalid;
  if (typeof source === 'boolean') {
    if (column.type === 'yesno') return ok(source ? 'yes' : 'no');
    if (column.type === 'text') return ok(source ? 'yes' : 'no');
    return invalid;
  }
  switch (column.type) {
    case 'text':
      return source.trim() !== '' && source.length <= MAX_TEXT ? ok(isDate ? localDate(source) ?? source : source) : invalid;
    case 'date': {
      const date = localDate(source);
      return date ? ok(date) : invalid;
    }
    case 'choice':
    case 'multichoice':
      return column.options.some((o) => o.code === source) ? ok(source) : invalid;
    default:
      return invalid;
  }
}

function ok(value: string): FieldValue {
  return { ok: true, value, number: null };
}
