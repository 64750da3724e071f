/**
 * Reads a study design file (`sdx study load <file>`): YAML → JSON Schema (`studies/design.schema.json`)
 * → the semantic rules a schema cannot state (unique codes, references between sections, per-type
 * members). Every problem found becomes one field error, so an author fixes a file in one round.
 */
import { load, YAMLException } from 'js-yaml';
import jsonLogic from 'json-logic-js';
import type { ErrorObject } from 'ajv/dist/2020.js';
import { DomainError, type FieldError } from '../errors.js';
import { designValidator } from './designSchema.js';
import type {
  ChoiceOption,
  ConditionSource,
  FieldDef,
  FieldType,
  FormDef,
  MedicationSource,
  ObservationMapping,
  StudyDesign,
  TableMapping,
} from './types.js';

/**
 * Parses, validates and completes a study design.
 *
 * @param yamlText - the design file's text (YAML 1.2, or JSON, which is YAML)
 * @returns the design with every default filled in
 * @throws DomainError `design_invalid` with `params.count` and one field error per problem: `pointer` is
 *   the JSON pointer of the offending place (`""` for a YAML syntax error), `code` says what is wrong
 *   (`yaml_syntax`, `schema`, `duplicate_code`, `unknown_form`, `unknown_field`, `min_above_max`, …) and
 *   `params.message` is an English sentence. Schema errors stop before the semantic checks, which assume
 *   the schema's shape.
 */
export function parseStudyDesign(yamlText: string): StudyDesign {
  const document = loadYaml(yamlText);
  const validate = designValidator();
  if (!validate(document)) throw designInvalid(schemaErrors(validate.errors ?? []));
  const design = document as StudyDesign;
  const problems = checkDesign(design);
  if (problems.length > 0) throw designInvalid(problems);
  return design;
}

function designInvalid(fieldErrors: FieldError[]): DomainError {
  return new DomainError('design_invalid', { count: fieldErrors.length }, fieldErrors);
}

function problem(pointer: string, code: string, message: string, extra: Record<string, unknown> = {}): FieldError {
  return { pointer, code, params: { message, ...extra } };
}

/** Builds a JSON pointer (RFC 6901) from path segments. */
function pointerOf(...segments: (string | number)[]): string {
  return segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

// ---------------------------------------------------------------------------------------------- YAML

function loadYaml(text: string): unknown {
  try {
    // js-yaml 5's default is the YAML 1.2 core schema: no custom tags, no code execution, and dates stay
    // strings, which is what the schema expects.
    return load(text);
  } catch (error) {
    if (error instanceof YAMLException && error.mark) {
      const line = error.mark.line + 1;
      const column = error.mark.column + 1;
      throw designInvalid([
        problem('', 'yaml_syntax', `YAML syntax error at line ${line}, column ${column}: ${error.reason}.`, { line, column }),
      ]);
    }
    // js-yaml asks callers to catch everything: an empty file, for one, fails without a position.
    const reason = error instanceof YAMLException ? error.reason : error instanceof Error ? error.message : String(error);
    throw designInvalid([problem('', 'yaml_syntax', `The file is not a YAML document: ${reason}.`)]);
  }
}

// -------------------------------------------------------------------------------------- JSON Schema

function schemaErrors(errors: ErrorObject[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors) {
    // Ajv reports a bad key of a map twice: once for the name's own subschema and once as `propertyNames`.
    if (error.propertyName !== undefined) continue;
    const fieldError = schemaError(error);
    const key = `${fieldError.pointer}\n${String(fieldError.params?.message)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(fieldError);
  }
  return out;
}

function schemaError(error: ErrorObject): FieldError {
  const at = error.instancePath;
  const place = (pointer: string) => (pointer === '' ? 'The document' : `The value at ${pointer}`);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': {
      const name = String(params.missingProperty);
      return problem(at + pointerOf(name), 'schema', `${place(at)} lacks the required property "${name}".`);
    }
    case 'additionalProperties': {
      const name = String(params.additionalProperty);
      const properties = (error.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
      const allowed = properties ? `; allowed are ${Object.keys(properties).join(', ')}` : '';
      return problem(at + pointerOf(name), 'schema', `${place(at)} has the unknown property "${name}"${allowed}.`);
    }
    case 'propertyNames': {
      const name = String(params.propertyName);
      return problem(at + pointerOf(name), 'schema', `The key "${name}" at ${at} is not a valid code (a lower-case letter, then lower-case letters, digits or _).`);
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ');
      return problem(at, 'schema', `${place(at)} must be one of ${allowed}.`);
    }
    case 'type':
      return problem(at, 'schema', `${place(at)} must be ${String(params.type).split(',').join(' or ')}.`);
    default:
      return problem(at, 'schema', `${place(at)} ${error.message ?? 'is invalid'}.`);
  }
}

// -------------------------------------------------------------------------------- semantic checks

/**
 * A field as the checks see it: the schema guarantees the member types, but not yet that only the
 * members of the field's own type are present (that is checked here).
 */
interface LooseField {
  code: string;
  type: FieldType;
  unit?: string;
  min?: number;
  max?: number;
  decimals?: number;
  options?: ChoiceOption[];
  columns?: LooseField[];
}

const NUMERIC_TYPES: ReadonlySet<FieldType> = new Set(['integer', 'decimal']);
const CHOICE_TYPES: ReadonlySet<FieldType> = new Set(['choice', 'multichoice']);

function checkDesign(design: StudyDesign): FieldError[] {
  const out: FieldError[] = [];
  checkSubjectFormat(design.subject_format, out);

  reportDuplicates(design.sites.map((s) => s.number), (i) => pointerOf('sites', i, 'number'), 'site number', out);

  const forms = new Map<string, FormDef>();
  design.forms.forEach((form) => { if (!forms.has(form.code)) forms.set(form.code, form); });

  reportDuplicates(design.visits.map((v) => v.code), (i) => pointerOf('visits', i, 'code'), 'visit code', out);
  const usedForms = new Set<string>();
  design.visits.forEach((visit, v) => {
    visit.forms.forEach((formCode, f) => {
      usedForms.add(formCode);
      if (!forms.has(formCode)) {
        out.push(problem(pointerOf('visits', v, 'forms', f), 'unknown_form', `Visit "${visit.code}" lists the form "${formCode}", which is not defined under forms.`));
      }
    });
    reportDuplicates(visit.forms, (f) => pointerOf('visits', v, 'forms', f), `form of visit "${visit.code}"`, out);
    // A window is measured from the planned day; without one it would silently mean nothing.
    if (visit.planned_day === null && (visit.window.before !== 0 || visit.window.after !== 0)) {
      out.push(problem(pointerOf('visits', v, 'window'), 'window_without_day', `Visit "${visit.code}" has a window but no planned_day to measure it from.`));
    }
  });

  reportDuplicates(design.forms.map((f) => f.code), (i) => pointerOf('forms', i, 'code'), 'form code', out);
  design.forms.forEach((form, i) => {
    reportDuplicates(form.fields.map((f) => f.code), (j) => pointerOf('forms', i, 'fields', j, 'code'), `field code in form "${form.code}"`, out);
    form.fields.forEach((field, j) => checkField(field, pointerOf('forms', i, 'fields', j), false, out));
    if (!usedForms.has(form.code)) {
      out.push(problem(pointerOf('forms', i), 'form_unused', `Form "${form.code}" is not collected at any visit; add it to a visit's forms or remove it.`));
    }
  });

  checkEditChecks(design, forms, out);
  checkFhirMapping(design, forms, out);
  return out;
}

function checkSubjectFormat(format: string, out: FieldError[]): void {
  const placeholders = format.match(/\{[^{}]*\}/g) ?? [];
  const sites = placeholders.filter((p) => p === '{site}').length;
  const seqs = placeholders.filter((p) => /^\{seq:[1-9]\}$/.test(p)).length;
  const others = placeholders.filter((p) => p !== '{site}' && !/^\{seq:[1-9]\}$/.test(p));
  const strayBrace = /[{}]/.test(format.replace(/\{[^{}]*\}/g, ''));
  if (sites !== 1 || seqs !== 1 || others.length > 0 || strayBrace) {
    const detail = others.length > 0 ? ` (unknown placeholder ${others.join(', ')})` : '';
    out.push(problem('/subject_format', 'subject_format_invalid',
      `subject_format "${format}" must contain {site} and {seq:N} (N from 1 to 9) exactly once each and no other braces${detail}.`));
  }
}

/** Reports every repeat of a code, pointing at the repeat and naming where the code was first used. */
function reportDuplicates(codes: string[], pointerAt: (index: number) => string, what: string, out: FieldError[]): void {
  const first = new Map<string, number>();
  codes.forEach((code, i) => {
    const earlier = first.get(code);
    if (earlier === undefined) {
      first.set(code, i);
    } else {
      out.push(problem(pointerAt(i), 'duplicate_code', `Duplicate ${what} "${code}": already used at ${pointerAt(earlier)}.`));
    }
  });
}

function checkField(field: LooseField, at: string, inTable: boolean, out: FieldError[]): void {
  const kind = inTable ? 'Column' : 'Field';
  const notAllowed = (member: string, applies: string) =>
    out.push(problem(`${at}/${member}`, 'property_not_allowed', `${kind} "${field.code}" is of type ${field.type}; ${member} applies only to ${applies}.`));

  if (NUMERIC_TYPES.has(field.type)) {
    if (field.type === 'integer') {
      for (const bound of ['min', 'max'] as const) {
        const value = field[bound];
        if (value !== undefined && !Number.isInteger(value)) {
          out.push(problem(`${at}/${bound}`, 'integer_expected', `${kind} "${field.code}" is an integer field, so its ${bound} must be an integer, not ${value}.`));
        }
      }
    }
    if (field.min !== undefined && field.max !== undefined && field.min > field.max) {
      out.push(problem(`${at}/max`, 'min_above_max', `${kind} "${field.code}" has min ${field.min} above max ${field.max}.`));
    }
  } else {
    for (const member of ['unit', 'min', 'max'] as const) {
      if (field[member] !== undefined) notAllowed(member, 'integer and decimal fields');
    }
  }
  if (field.decimals !== undefined && field.type !== 'decimal') notAllowed('decimals', 'decimal fields');

  if (CHOICE_TYPES.has(field.type)) {
    if (!field.options || field.options.length === 0) {
      out.push(problem(field.options ? `${at}/options` : at, 'options_missing', `${kind} "${field.code}" is of type ${field.type} and needs at least one option.`));
    } else {
      reportDuplicates(field.options.map((o) => o.code), (k) => `${at}/options/${k}/code`, `option code in "${field.code}"`, out);
    }
  } else if (field.options !== undefined) {
    notAllowed('options', 'choice and multichoice fields');
  }

  if (field.type === 'table') {
    if (inTable) {
      out.push(problem(`${at}/type`, 'nested_table', `Column "${field.code}" cannot be a table: tables do not nest.`));
    } else if (!field.columns || field.columns.length === 0) {
      out.push(problem(field.columns ? `${at}/columns` : at, 'columns_missing', `Field "${field.code}" is a table and needs at least one column.`));
    } else {
      const columns = field.columns;
      reportDuplicates(columns.map((c) => c.code), (k) => `${at}/columns/${k}/code`, `column code in table "${field.code}"`, out);
      columns.forEach((column, k) => checkField(column, `${at}/columns/${k}`, true, out));
    }
  } else if (field.columns !== undefined) {
    notAllowed('columns', 'table fields');
  }
}

// ------------------------------------------------------------------------------------ edit checks

/**
 * The names a JSON Logic `var` may use at one depth of a rule: the form's fields at the top, a table's
 * columns inside `all`/`some`/`none`/`map`/`filter` over that table. A table field maps to its columns'
 * scope; other names map to null.
 */
interface VarScope {
  /** Completes "names no …" in a message, e.g. `field of form "vs"`. */
  describe: string;
  names: Map<string, VarScope | null>;
}

/** The operations json-logic-js ships with; anything else must have been added with `add_operation`. */
const BUILTIN_OPERATIONS: ReadonlySet<string> = new Set([
  'var', 'missing', 'missing_some', 'if', '?:', '==', '===', '!=', '!==', '!', '!!', 'or', 'and',
  '>', '>=', '<', '<=', 'max', 'min', '+', '-', '*', '/', '%', 'map', 'filter', 'reduce', 'all', 'none',
  'some', 'merge', 'in', 'cat', 'substr', 'log',
]);

/** Operations whose second argument is evaluated once per element of the first. */
const ITERATING_OPERATIONS: ReadonlySet<string> = new Set(['all', 'some', 'none', 'map', 'filter']);

function checkEditChecks(design: StudyDesign, forms: Map<string, FormDef>, out: FieldError[]): void {
  reportDuplicates(design.edit_checks.map((c) => c.code), (i) => pointerOf('edit_checks', i, 'code'), 'edit check code', out);
  design.edit_checks.forEach((check, i) => {
    const form = forms.get(check.form);
    if (!form) {
      out.push(problem(pointerOf('edit_checks', i, 'form'), 'unknown_form', `Edit check "${check.code}" runs on the form "${check.form}", which is not defined under forms.`));
      return;
    }
    if (!form.fields.some((f) => f.code === check.field)) {
      out.push(problem(pointerOf('edit_checks', i, 'field'), 'unknown_field', `Edit check "${check.code}" opens its query on "${check.field}", which is not a field of form "${form.code}".`));
    }
    walkRule(check.rule, pointerOf('edit_checks', i, 'rule'), formScope(form), out);
  });
}

function formScope(form: FormDef): VarScope {
  const names = new Map<string, VarScope | null>();
  for (const field of form.fields) {
    // `columns` may be missing here: that is reported on the field, not again as an unknown variable.
    const columns = (field as LooseField).columns ?? [];
    names.set(field.code, field.type === 'table'
      ? { describe: `column of table "${field.code}"`, names: new Map(columns.map((c) => [c.code, null])) }
      : null);
  }
  return { describe: `field of form "${form.code}"`, names };
}

/**
 * Checks every variable a JSON Logic rule reads against the scope it is read in, and that every
 * operation exists. A null scope means the data there cannot be known (e.g. inside `reduce`), so
 * names are not checked.
 */
function walkRule(node: unknown, at: string, scope: VarScope | null, out: FieldError[]): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => walkRule(item, `${at}/${i}`, scope, out));
    return;
  }
  // Like json-logic-js, treat only single-key objects as operations; others are data literals.
  if (node === null || typeof node !== 'object' || Object.keys(node).length !== 1) return;
  const [op, args] = Object.entries(node)[0] as [string, unknown];
  const opAt = at + pointerOf(op);
  const list = Array.isArray(args) ? args : [args];
  const argAt = (i: number) => (Array.isArray(args) ? `${opAt}/${i}` : opAt);

  if (!isKnownOperation(op)) {
    out.push(problem(opAt, 'unknown_operation', `"${op}" is not a JSON Logic operation.`));
    return;
  }
  switch (op) {
    case 'var':
      if (typeof list[0] === 'string' || typeof list[0] === 'number') checkVarName(list[0], argAt(0), scope, out);
      else walkRule(list[0], argAt(0), scope, out);
      list.slice(1).forEach((arg, i) => walkRule(arg, argAt(i + 1), scope, out));
      return;
    case 'missing': {
      // json-logic-js takes either the names as arguments or one array of names.
      const [names, namesAt] = Array.isArray(list[0]) ? [list[0] as unknown[], argAt(0)] : [list, null];
      names.forEach((name, i) => {
        const nameAt = namesAt === null ? argAt(i) : `${namesAt}/${i}`;
        if (typeof name === 'string') checkVarName(name, nameAt, scope, out);
        else walkRule(name, nameAt, scope, out);
      });
      return;
    }
    case 'missing_some':
      walkRule(list[0], argAt(0), scope, out);
      if (Array.isArray(list[1])) {
        list[1].forEach((name: unknown, i: number) => {
          if (typeof name === 'string') checkVarName(name, `${argAt(1)}/${i}`, scope, out);
          else walkRule(name, `${argAt(1)}/${i}`, scope, out);
        });
      } else {
        walkRule(list[1], argAt(1), scope, out);
      }
      return;
    case 'reduce':
      walkRule(list[0], argAt(0), scope, out);
      // The reducer sees {current, accumulator}, not the form.
      walkRule(list[1], argAt(1), null, out);
      list.slice(2).forEach((arg, i) => walkRule(arg, argAt(i + 2), scope, out));
      return;
    default:
      if (ITERATING_OPERATIONS.has(op)) {
        walkRule(list[0], argAt(0), scope, out);
        walkRule(list[1], argAt(1), elementScope(list[0], scope), out);
        list.slice(2).forEach((arg, i) => walkRule(arg, argAt(i + 2), scope, out));
        return;
      }
      list.forEach((arg, i) => walkRule(arg, argAt(i), scope, out));
  }
}

/** The scope inside an iteration: a table's columns when iterating `{"var": "<table field>"}`, else unknown. */
function elementScope(source: unknown, scope: VarScope | null): VarScope | null {
  if (scope === null || source === null || typeof source !== 'object' || Array.isArray(source)) return null;
  const name = (source as Record<string, unknown>).var;
  const key: unknown = Array.isArray(name) ? name[0] : name;
  return typeof key === 'string' ? scope.names.get(key) ?? null : null;
}

function checkVarName(name: string | number, at: string, scope: VarScope | null, out: FieldError[]): void {
  if (scope === null) return;
  // A dotted name reads into a value (a table row's column): its first segment must be in scope.
  const head = String(name).split('.', 1)[0] ?? '';
  if (!scope.names.has(head)) {
    out.push(problem(at, 'unknown_variable', `The rule reads "${name}", which names no ${scope.describe}.`));
  }
}

function isKnownOperation(op: string): boolean {
  if (BUILTIN_OPERATIONS.has(op)) return true;
  // An operation added with jsonLogic.add_operation is only visible by trying it.
  try {
    jsonLogic.apply({ [op]: [] }, {});
    return true;
  } catch (error) {
    return !(error instanceof Error && error.message.startsWith('Unrecognized operation'));
  }
}

// ------------------------------------------------------------------------------------ FHIR mapping

const CONDITION_COLUMN_TYPES: Record<ConditionSource, readonly FieldType[]> = {
  display: ['text', 'choice'],
  code: ['text', 'choice'],
  onset: ['date', 'text'],
  abatement: ['date', 'text'],
  ongoing: ['yesno'],
};

const MEDICATION_COLUMN_TYPES: Record<MedicationSource, readonly FieldType[]> = {
  display: ['text', 'choice'],
  code: ['text', 'choice'],
  start: ['date', 'text'],
  end: ['date', 'text'],
  dosage: ['text'],
  status: ['text', 'choice'],
  ongoing: ['yesno'],
};

function checkFhirMapping(design: StudyDesign, forms: Map<string, FormDef>, out: FieldError[]): void {
  const { observations, conditions, medications } = design.fhir_mapping;

  observations.forEach((mapping, i) => {
    const at = pointerOf('fhir_mapping', 'observations', i);
    const field = findField(forms, mapping.form, mapping.field, at, out);
    if (!field) return;
    if (field.type === 'table') {
      out.push(problem(`${at}/field`, 'field_type_mismatch', `An observation fills one value, but "${mapping.form}.${mapping.field}" is a table.`));
      return;
    }
    const numeric = NUMERIC_TYPES.has(field.type);
    // Imported quantities arrive in many units (mg/dL, mmol/L, [lb_av]); without a target unit there is nothing to convert to.
    if (numeric && !('unit' in field && field.unit)) {
      out.push(problem(`${at}/field`, 'unit_missing', `"${mapping.form}.${mapping.field}" is filled from observations, so it needs a unit to convert them to.`));
    }
    if (!numeric && mapping.molar_mass !== undefined) {
      out.push(problem(`${at}/molar_mass`, 'property_not_allowed', `molar_mass applies only to integer and decimal targets, and "${mapping.form}.${mapping.field}" is of type ${field.type}.`));
    }
    if (mapping.date_field !== undefined) checkDateField(mapping, observations, forms, `${at}/date_field`, out);
  });

  const checkTableMapping = <S extends string>(
    list: TableMapping<S>[], section: string, columnTypes: Record<S, readonly FieldType[]>, pointer = (i: number) => pointerOf('fhir_mapping', section, i),
  ) => list.forEach((mapping, i) => {
    const at = pointer(i);
    const field = findField(forms, mapping.form, mapping.field, at, out);
    if (!field) return;
    if (field.type !== 'table') {
      out.push(problem(`${at}/field`, 'field_type_mismatch', `${section} fill table rows, but "${mapping.form}.${mapping.field}" is of type ${field.type}.`));
      return;
    }
    const columns = (field as LooseField).columns ?? [];
    // A table without columns is reported on the field; every mapped column would repeat that.
    if (columns.length === 0) return;
    for (const [columnCode, source] of Object.entries<S>(mapping.columns)) {
      const column = columns.find((c) => c.code === columnCode);
      const columnAt = `${at}/columns${pointerOf(columnCode)}`;
      if (!column) {
        out.push(problem(columnAt, 'unknown_column', `"${columnCode}" is not a column of table "${mapping.form}.${mapping.field}".`));
      } else if (!columnTypes[source].includes(column.type)) {
        out.push(problem(columnAt, 'column_type_mismatch', `Column "${columnCode}" is of type ${column.type}, but ${source} needs a column of type ${columnTypes[source].join(' or ')}.`));
      }
    }
  });
  checkTableMapping(conditions, 'conditions', CONDITION_COLUMN_TYPES);
  conditions.forEach((mapping, i) => {
    if (mapping.onset_after_enrolment) {
      const at = pointerOf('fhir_mapping', 'conditions', i, 'onset_after_enrolment');
      checkTableMapping([{ systems: mapping.systems, ...mapping.onset_after_enrolment }], 'onset_after_enrolment', CONDITION_COLUMN_TYPES, () => at);
    }
  });
  checkTableMapping(medications, 'medications', MEDICATION_COLUMN_TYPES);
}

/**
 * A mapping's `date_field` must be a date field of its form, and no observation mapping may fill it as
 * a value: the place would then get two items, a value and a measurement date.
 */
function checkDateField(
  mapping: ObservationMapping, observations: ObservationMapping[], forms: Map<string, FormDef>, at: string, out: FieldError[],
): void {
  const form = forms.get(mapping.form)!;
  const dateField = form.fields.find((f) => f.code === mapping.date_field);
  if (!dateField) {
    out.push(problem(at, 'unknown_field', `date_field "${mapping.date_field}" is not a field of form "${form.code}".`));
  } else if (dateField.type !== 'date') {
    out.push(problem(at, 'field_type_mismatch', `date_field "${form.code}.${dateField.code}" receives a measurement date, so it must be of type date, not ${dateField.type}.`));
  } else if (observations.some((o) => o.form === form.code && o.field === dateField.code)) {
    out.push(problem(at, 'date_field_mapped', `date_field "${form.code}.${dateField.code}" is also filled by an observation mapping; a field is either a value or the measurement date.`));
  }
}

function findField(
  forms: Map<string, FormDef>, formCode: string, fieldCode: string, at: string, out: FieldError[],
): FieldDef | undefined {
  const form = forms.get(formCode);
  if (!form) {
    out.push(problem(`${at}/form`, 'unknown_form', `The mapping targets the form "${formCode}", which is not defined under forms.`));
    return undefined;
  }
  const field = form.fields.find((f) => f.code === fieldCode);
  if (!field) {
    out.push(problem(`${at}/field`, 'unknown_field', `The mapping targets "${fieldCode}", which is not a field of form "${formCode}".`));
  }
  return field;
}
