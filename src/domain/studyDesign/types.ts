/**
 * The shape of a study design after `parseStudyDesign` has validated it and filled its defaults.
 *
 * Property names are the YAML file's snake_case keys, unchanged: the file format
 * (`studies/design.schema.json`, which documents every member) is the source of truth, and renaming
 * would add a mapping layer that can drift. Members that have a default are required here.
 */

/** A visit, form, field, column or edit check code: `^[a-z][a-z0-9_]{0,31}$`. */
export type DesignCode = string;

/** A study: its sites, visit schedule, forms, edit checks and FHIR mapping. */
export interface StudyDesign {
  /** `^[A-Za-z0-9_-]{1,32}$`, the study's identifier in the API. */
  code: string;
  name: string;
  blinded: boolean;
  consent_required: boolean;
  enrolment_open: boolean;
  /** A visit date outside its window opens an automatic query (issue 19, point 7). */
  visit_window_queries: boolean;
  /** An update that changes or clears a saved value must give a reason for change (issue 22, point 4). */
  reason_required_on_update: boolean;
  /** Subject number template with `{site}` and `{seq:N}` exactly once each, e.g. `{site}-{seq:3}`. */
  subject_format: string;
  sites: SiteDef[];
  visits: VisitDef[];
  forms: FormDef[];
  edit_checks: EditCheckDef[];
  fhir_mapping: FhirMapping;
}

export interface SiteDef {
  /** 1-8 letters or digits, always a string (`"01"`). */
  number: string;
  name: string;
}

export interface VisitWindow {
  /** Days before the planned day, ≥ 0. */
  before: number;
  /** Days after the planned day, ≥ 0. */
  after: number;
}

export interface VisitDef {
  code: DesignCode;
  name: string;
  /** Day relative to enrolment (day 0), or null for a visit without a planned day (e.g. unscheduled). */
  planned_day: number | null;
  window: VisitWindow;
  repeating: boolean;
  /** Codes of forms that exist in `StudyDesign.forms`. */
  forms: DesignCode[];
}

/** `unblinded` forms are visible only to unblinded users of a blinded study. */
export type FormTeam = 'all' | 'unblinded';

export interface FormDef {
  code: DesignCode;
  name: string;
  team: FormTeam;
  fields: FieldDef[];
}

interface FieldBase {
  code: DesignCode;
  label: string;
  required: boolean;
}

export interface IntegerFieldDef extends FieldBase {
  type: 'integer';
  /** UCUM unit; always set when an observation mapping targets the field. */
  unit?: string;
  min?: number;
  max?: number;
}

export interface DecimalFieldDef extends FieldBase {
  type: 'decimal';
  /** UCUM unit; always set when an observation mapping targets the field. */
  unit?: string;
  min?: number;
  max?: number;
  /** Decimal places kept. */
  decimals?: number;
}

export interface ChoiceOption {
  /** The stored value, always a string. */
  code: string;
  label: string;
}

export interface ChoiceFieldDef extends FieldBase {
  /** `choice` stores one option code, `multichoice` a list of them. */
  type: 'choice' | 'multichoice';
  /** At least one option; codes unique within the field. */
  options: ChoiceOption[];
}

/** Field types with no type-specific members. */
export interface PlainFieldDef extends FieldBase {
  /** `date` is YYYY-MM-DD, `time` HH:MM, `yesno` a boolean. */
  type: 'date' | 'time' | 'yesno' | 'text';
}

/** A column of a table: any field but a table. */
export type ColumnDef = IntegerFieldDef | DecimalFieldDef | ChoiceFieldDef | PlainFieldDef;

export interface TableFieldDef extends FieldBase {
  type: 'table';
  /** At least one column; codes unique within the table. */
  columns: ColumnDef[];
}

/** A question on a form, discriminated by `type`. */
export type FieldDef = ColumnDef | TableFieldDef;

export type FieldType = FieldDef['type'];

/** A JSON Logic rule (https://jsonlogic.com): an object with one operator key. */
export type JsonLogicRule = Record<string, unknown>;

/** `query` saves the record and opens a query on the field; `reject` refuses the record. */
export type EditCheckAction = 'query' | 'reject';

export interface EditCheckDef {
  code: DesignCode;
  /** A form that exists. */
  form: DesignCode;
  /** A field of that form: where the query is opened. */
  field: DesignCode;
  /** Must be truthy over the record's values; every `var` names a field of `form`. */
  rule: JsonLogicRule;
  message: string;
  message_ru?: string;
  action: EditCheckAction;
}

export interface FhirCoding {
  system: string;
  code: string;
}

/** Which observation fills a field when several fall within the visit window. */
export type ObservationPick = 'nearest' | 'first' | 'last' | 'min' | 'max';

/**
 * Fills one non-table field from Observations whose own code, or one of whose components' codes,
 * is among `codes`. An integer or decimal target always has a `unit`.
 */
export interface ObservationMapping {
  codes: FhirCoding[];
  form: DesignCode;
  field: DesignCode;
  pick: ObservationPick;
  /** g/mol, for converting mass to substance concentration (mg/dL ↔ mmol/L). */
  molar_mass?: number;
  /** A date field of `form` that receives the chosen Observation's measurement date. */
  date_field?: DesignCode;
}

export type ConditionSource = 'display' | 'code' | 'onset' | 'abatement' | 'ongoing';
export type MedicationSource = 'display' | 'code' | 'start' | 'end' | 'dosage' | 'status' | 'ongoing';

/** Copies each resource into one row of a table field; `columns` maps column code to source. */
export interface TableMapping<Source extends string> {
  /** Code system URIs in order of preference. */
  systems: string[];
  form: DesignCode;
  /** A table field of `form`. */
  field: DesignCode;
  /** Keys are existing column codes of that table. */
  columns: Record<DesignCode, Source>;
}

export interface ConditionMapping extends TableMapping<ConditionSource> {
  /**
   * Where a Condition whose onset is after the enrolment day goes instead, as an adverse-event candidate
   * for the site's review (never saved by `mode=save`). Without it such a Condition has no place.
   */
  onset_after_enrolment?: Omit<TableMapping<ConditionSource>, 'systems'>;
}
export type MedicationMapping = TableMapping<MedicationSource>;

export interface FhirMapping {
  observations: ObservationMapping[];
  conditions: ConditionMapping[];
  medications: MedicationMapping[];
}
