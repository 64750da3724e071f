import type { ColumnDef, FormDef, StudyDesign, TableFieldDef } from '../studyDesign/types.js';
import { codeListOid, formOid, itemGroupOid, itemOid, studyEventOid, unitOid } from './oids.js';
import { xmlElement, xmlTextElement } from './xmlText.js';

/** ODM has no decimal type: a decimal is a `float` with its decimals as significant digits; `HH:MM` is a partial time. */
const ODM_TYPES: Record<ColumnDef['type'], string> = {
  integer: 'integer', decimal: 'float', date: 'date', time: 'partialTime', yesno: 'boolean', choice: 'text', multichoice: 'text', text: 'text',
};

function translated(name: string, text: string): string {
  return xmlElement(name, {}, [xmlTextElement('TranslatedText', text, { 'xml:lang': 'en' })]);
}

function itemLength(field: ColumnDef): number | undefined {
  switch (field.type) {
    case 'text': return 4000;
    case 'choice': return Math.max(1, ...field.options.map((o) => o.code.length));
    case 'multichoice': return Math.max(1, field.options.map((o) => o.code).join(',').length);
    case 'date': return 10;
    case 'time': return 5;
    default: return undefined;
  }
}

function rangeChecks(field: ColumnDef): string[] {
  if (field.type !== 'integer' && field.type !== 'decimal') return [];
  // A value outside the range is saved and opens a query (it is not refused): a soft check.
  const check = (comparator: string, value: number) => xmlElement('RangeCheck', { Comparator: comparator, SoftHard: 'Soft' }, [xmlTextElement('CheckValue', String(value))]);
  return [...(field.min === undefined ? [] : [check('GE', field.min)]), ...(field.max === undefined ? [] : [check('LE', field.max)])];
}

function itemDef(oid: string, field: ColumnDef, codeList: string | undefined): string {
  const unit = 'unit' in field ? field.unit : undefined;
  return xmlElement('ItemDef', {
    OID: oid, Name: field.code, DataType: ODM_TYPES[field.type], Length: itemLength(field),
    SignificantDigits: field.type === 'decimal' ? field.decimals ?? 0 : undefined,
  }, [
    translated('Question', field.label),
    ...(unit ? [xmlElement('MeasurementUnitRef', { MeasurementUnitOID: unitOid(unit) })] : []),
    ...rangeChecks(field),
    ...(codeList ? [xmlElement('CodeListRef', { CodeListOID: codeList })] : []),
  ]);
}

function codeList(oid: string, field: ColumnDef): string[] {
  if (field.type !== 'choice' && field.type !== 'multichoice') return [];
  return [xmlElement('CodeList', { OID: oid, Name: field.label, DataType: 'text' }, field.options.map((o, i) =>
    xmlElement('CodeListItem', { CodedValue: o.code, OrderNumber: i + 1 }, [translated('Decode', o.label)])))];
}

function itemGroupDef(oid: string, name: string, repeating: boolean, items: { oid: string; required: boolean }[]): string {
  return xmlElement('ItemGroupDef', { OID: oid, Name: name, Repeating: repeating ? 'Yes' : 'No' },
    items.map((item, i) => xmlElement('ItemRef', { ItemOID: item.oid, OrderNumber: i + 1, Mandatory: item.required ? 'Yes' : 'No' })));
}

/** Every item of a form: its own fields, then each table's columns, with the group each belongs to. */
function formItems(form: FormDef): { group: string; oid: string; field: ColumnDef; codeList: string }[] {
  return form.fields.flatMap((field) => field.type === 'table'
    ? field.columns.map((column) => ({ group: itemGroupOid(form.code, field.code), oid: itemOid(form.code, field.code, column.code), field: column, codeList: codeListOid(form.code, field.code, column.code) }))
    : [{ group: itemGroupOid(form.code), oid: itemOid(form.code, field.code), field, codeList: codeListOid(form.code, field.code) }]);
}

function tablesOf(form: FormDef): TableFieldDef[] {
  return form.fields.filter((f): f is TableFieldDef => f.type === 'table');
}

/**
 * The `Study` element of an ODM 1.3.2 file: global variables, the UCUM units as measurement units, and
 * one `MetaDataVersion` with the visit schedule (`Protocol`, `StudyEventDef`), the forms, their item
 * groups (a form's fields, and a repeating group per table field), items, ranges and code lists, in the
 * order the schema asks for.
 */
export function odmStudy(design: StudyDesign, metaDataVersionOid: string): string {
  const items = design.forms.flatMap(formItems);
  const units = [...new Set(items.flatMap(({ field }) => ('unit' in field && field.unit ? [field.unit] : [])))];
  const groups = design.forms.flatMap((form) => [
    itemGroupDef(itemGroupOid(form.code), form.name, false,
      formItems(form).filter((i) => i.group === itemGroupOid(form.code)).map((i) => ({ oid: i.oid, required: i.field.required }))),
    ...tablesOf(form).map((table) => itemGroupDef(itemGroupOid(form.code, table.code), `${form.name}: ${table.label}`, true,
      table.columns.map((c) => ({ oid: itemOid(form.code, table.code, c.code), required: c.required })))),
  ]);
  const metaDataVersion = xmlElement('MetaDataVersion', { OID: metaDataVersionOid, Name: `${design.name} (design ${metaDataVersionOid})` }, [
    xmlElement('Protocol', {}, design.visits.map((v, i) => xmlElement('StudyEventRef', { StudyEventOID: studyEventOid(v.code), OrderNumber: i + 1, Mandatory: 'No' }))),
    ...design.visits.map((v) => xmlElement('StudyEventDef', {
      OID: studyEventOid(v.code), Name: v.name, Repeating: v.repeating ? 'Yes' : 'No', Type: v.planned_day === null ? 'Unscheduled' : 'Scheduled',
    }, v.forms.map((code, i) => xmlElement('FormRef', { FormOID: formOid(code), OrderNumber: i + 1, Mandatory: 'No' })))),
    ...design.forms.map((form) => xmlElement('FormDef', { OID: formOid(form.code), Name: form.name, Repeating: 'No' }, [
      xmlElement('ItemGroupRef', { ItemGroupOID: itemGroupOid(form.code), Mandatory: 'Yes' }),
      ...tablesOf(form).map((t) => xmlElement('ItemGroupRef', { ItemGroupOID: itemGroupOid(form.code, t.code), Mandatory: t.required ? 'Yes' : 'No' })),
    ])),
    ...groups,
    ...items.map((i) => itemDef(i.oid, i.field, i.field.type === 'choice' || i.field.type === 'multichoice' ? i.codeList : undefined)),
    ...items.flatMap((i) => codeList(i.codeList, i.field)),
  ]);
  return xmlElement('Study', { OID: design.code }, [
    xmlElement('GlobalVariables', {}, [xmlTextElement('StudyName', design.name), xmlTextElement('StudyDescription', design.name), xmlTextElement('ProtocolName', design.code)]),
    ...(units.length === 0 ? [] : [xmlElement('BasicDefinitions', {}, units.map((u) => xmlElement('MeasurementUnit', { OID: unitOid(u), Name: u }, [translated('Symbol', u)])))]),
    metaDataVersion,
  ]);
}
