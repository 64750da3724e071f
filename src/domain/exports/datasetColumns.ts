import type { ColumnDef, FieldDef, StudyDesign } from '../studyDesign/types.js';

/** Column metadata of a CDISC Dataset-JSON v1.1 dataset (its `Column` definition). */
export interface DatasetColumn {
  itemOID: string;
  name: string;
  label: string;
  dataType: 'string' | 'integer' | 'decimal' | 'boolean' | 'date' | 'time';
  targetDataType?: 'decimal';
  length?: number;
  displayFormat?: string;
  keySequence?: number;
}

/** What the saved value string of a field becomes in a dataset row: the JSON type its column's data type asks for. */
export type CellValue = string | number | boolean | null;

/** The planned length of a text (Dataset-JSON `length`), at least 1. */
function lengthOf(texts: string[]): number {
  return Math.max(1, ...texts.map((t) => t.length));
}

/** The longest a number of the field's range can be written (sign, digits, point, decimals); 20 without a range. */
function numberLength(field: { min?: number; max?: number }, decimals: number): number {
  if (field.min === undefined || field.max === undefined) return 20;
  const digits = Math.max(Math.trunc(Math.abs(field.min)), Math.trunc(Math.abs(field.max))).toString().length;
  return (field.min < 0 ? 1 : 0) + digits + (decimals > 0 ? decimals + 1 : 0);
}

/** A field's label with its UCUM unit in brackets: Dataset-JSON columns have no member for a unit. */
function labelWithUnit(field: { label: string; unit?: string }): string {
  return field.unit ? `${field.label} (${field.unit})` : field.label;
}

/**
 * The column of one field or table column: the data type, length and display format the standard
 * asks for (Dataset-JSON v1.1, "Supported Column Data Type Combinations"): decimals travel as strings
 * so that no digit is rounded, dates and times as ISO 8601 strings.
 */
export function fieldColumn(itemOID: string, name: string, field: ColumnDef): DatasetColumn {
  const base = { itemOID, name, label: labelWithUnit(field) };
  switch (field.type) {
    case 'integer':
      return { ...base, dataType: 'integer', length: numberLength(field, 0) };
    case 'decimal': {
      const decimals = field.decimals ?? 0;
      const length = numberLength(field, decimals);
      return { ...base, dataType: 'decimal', targetDataType: 'decimal', length, displayFormat: `${length}.${decimals}` };
    }
    case 'date':
      return { ...base, dataType: 'date', length: 10, displayFormat: 'E8601DA.' };
    case 'time':
      return { ...base, dataType: 'time', length: 5, displayFormat: 'E8601TM.' };
    case 'yesno':
      return { ...base, dataType: 'boolean' };
    case 'choice':
      return { ...base, dataType: 'string', length: lengthOf(field.options.map((o) => o.code)) };
    case 'multichoice':
      return { ...base, dataType: 'string', length: lengthOf([field.options.map((o) => o.code).join(',')]) };
    case 'text':
      return { ...base, dataType: 'string', length: 4000 };
  }
}

/** A saved value string as its column's JSON value; an empty field is null (Dataset-JSON: "missing values are null"). */
export function cellValue(field: ColumnDef, saved: string | undefined): CellValue {
  if (saved === undefined || saved === '') return null;
  switch (field.type) {
    case 'integer':
      return Number(saved);
    case 'yesno':
      return saved.toLowerCase() === 'yes';
    default:
      return saved;
  }
}

/** The column that keeps a field's not-done mark (ND, UNK, NA). */
export function markColumn(itemOID: string, name: string, field: FieldDef): DatasetColumn {
  return { itemOID: `${itemOID}.ND`, name, label: `${field.label}: why empty (ND not done, UNK unknown, NA not applicable)`, dataType: 'string', length: 3 };
}

/** The columns every dataset starts with: where a row belongs. `withRow` for a table's datasets. */
export function identifyingColumns(design: StudyDesign, prefix: string, subjectLength: number, withRow: boolean): DatasetColumn[] {
  const columns: DatasetColumn[] = [
    { itemOID: `${prefix}.STUDYID`, name: 'STUDYID', label: 'Study code', dataType: 'string', length: lengthOf([design.code]), keySequence: 1 },
    { itemOID: `${prefix}.SITEID`, name: 'SITEID', label: 'Site number', dataType: 'string', length: lengthOf(design.sites.map((s) => s.number)) },
    { itemOID: `${prefix}.SUBJID`, name: 'SUBJID', label: 'Patient (subject) number', dataType: 'string', length: subjectLength, keySequence: 2 },
    { itemOID: `${prefix}.VISITCD`, name: 'VISITCD', label: 'Visit code', dataType: 'string', length: lengthOf(design.visits.map((v) => v.code)) },
    { itemOID: `${prefix}.VISIT`, name: 'VISIT', label: 'Visit name', dataType: 'string', length: lengthOf(design.visits.map((v) => v.name)) },
    { itemOID: `${prefix}.VISITNUM`, name: 'VISITNUM', label: 'Visit order in the schedule', dataType: 'integer', keySequence: 3 },
    { itemOID: `${prefix}.INSTANCE`, name: 'INSTANCE', label: 'Occurrence of a repeating visit', dataType: 'integer', keySequence: 4 },
    { itemOID: `${prefix}.FORMSTAT`, name: 'FORMSTAT', label: 'Form status (complete, draft)', dataType: 'string', length: 8 },
  ];
  if (withRow) columns.push({ itemOID: `${prefix}.ROW`, name: 'ROW', label: 'Table row number', dataType: 'integer', keySequence: 5 });
  return columns;
}
