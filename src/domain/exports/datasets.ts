import type { ExportRecord } from '../stores.js';
import type { ColumnDef, FormDef, StudyDesign, TableFieldDef } from '../studyDesign/types.js';
import { cellValue, fieldColumn, identifyingColumns, markColumn, type CellValue, type DatasetColumn } from './datasetColumns.js';
import { itemGroupOid, itemOid } from './oids.js';

/**
 * A dataset of the study, as the Dataset-JSON export serves it: one per form, and one per table field
 * of a form, whose rows are the table's rows.
 */
export interface DatasetDefinition {
  name: string;
  label: string;
  itemGroupOID: string;
  form: FormDef;
  table: TableFieldDef | null;
  columns: DatasetColumn[];
}

/** The planned length of a patient number: the database column's. */
const SUBJECT_LENGTH = 32;

/**
 * Column names from codes in capitals, made unique: a field may be called `visit` or `row`, and a
 * mark column `<FIELD>ND` may meet a field of that name, so a clash takes a `_2`, `_3`… suffix.
 */
function uniqueNamer(taken: Iterable<string>): (wanted: string) => string {
  const used = new Set(taken);
  return (wanted) => {
    let name = wanted;
    for (let n = 2; used.has(name); n += 1) name = `${wanted}_${n}`;
    used.add(name);
    return name;
  };
}

function formDataset(design: StudyDesign, form: FormDef): DatasetDefinition {
  const oid = itemGroupOid(form.code);
  const columns = identifyingColumns(design, oid, SUBJECT_LENGTH, false);
  const nameOf = uniqueNamer(columns.map((c) => c.name));
  for (const field of form.fields) {
    const name = nameOf(field.code.toUpperCase());
    if (field.type !== 'table') columns.push(fieldColumn(itemOid(form.code, field.code), name, field));
    columns.push(markColumn(itemOid(form.code, field.code), nameOf(`${name}ND`), field));
  }
  return { name: form.code.toUpperCase(), label: form.name, itemGroupOID: oid, form, table: null, columns };
}

function tableDataset(design: StudyDesign, form: FormDef, table: TableFieldDef): DatasetDefinition {
  const oid = itemGroupOid(form.code, table.code);
  const columns = identifyingColumns(design, oid, SUBJECT_LENGTH, true);
  const nameOf = uniqueNamer(columns.map((c) => c.name));
  for (const column of table.columns) columns.push(fieldColumn(itemOid(form.code, table.code, column.code), nameOf(column.code.toUpperCase()), column));
  return {
    name: `${form.code}_${table.code}`.toUpperCase(),
    label: `${form.name}: ${table.label}`,
    itemGroupOID: oid,
    form,
    table,
    columns,
  };
}

/**
 * The datasets of the forms given (the forms a key may see), in the design's order, each with a name of its
 * own: the form `mh_conditions` and the table `conditions` of the form `mh` would both be `MH_CONDITIONS`,
 * and `getDataset` could serve only one of them. The first in the design's order keeps the name (the one
 * served before names were made unique); a later one takes the first `_2`, `_3`… that no dataset is called.
 */
export function datasetsOf(design: StudyDesign, forms: FormDef[]): DatasetDefinition[] {
  const datasets = forms.flatMap((form) => [
    formDataset(design, form),
    ...form.fields.filter((f): f is TableFieldDef => f.type === 'table').map((table) => tableDataset(design, form, table)),
  ]);
  // Every name a dataset is called by its form or table is taken, so a suffixed one never takes another's.
  const suffixed = uniqueNamer(datasets.map((d) => d.name));
  const kept = new Set<string>();
  return datasets.map((dataset) => {
    if (!kept.has(dataset.name)) {
      kept.add(dataset.name);
      return dataset;
    }
    return { ...dataset, name: suffixed(dataset.name) };
  });
}

/** Where a record stands: the columns every dataset starts with. */
function identifyingCells(design: StudyDesign, record: ExportRecord): CellValue[] {
  const visitIndex = design.visits.findIndex((v) => v.code === record.visit);
  const visit = design.visits[visitIndex];
  return [design.code, record.site, record.subject, record.visit, visit?.name ?? record.visit, visitIndex + 1, record.instance, record.status];
}

/**
 * The dataset rows of one saved record: one for a form's dataset, one per table row for a table's.
 * The cells follow `dataset.columns` one for one.
 */
export function datasetRows(design: StudyDesign, dataset: DatasetDefinition, record: ExportRecord): CellValue[][] {
  const start = identifyingCells(design, record);
  if (dataset.table) {
    const columns: ColumnDef[] = dataset.table.columns;
    return (record.tables[dataset.table.code] ?? []).map((row, index) => [
      ...start,
      index + 1,
      ...columns.map((column) => cellValue(column, row[column.code])),
    ]);
  }
  const cells = [...start];
  for (const field of dataset.form.fields) {
    if (field.type !== 'table') cells.push(cellValue(field, record.values[field.code]));
    cells.push(record.notDone[field.code] ?? null);
  }
  return [cells];
}
