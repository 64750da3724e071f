/**
 * Generated from studies/design.schema.json by scripts/generateDesignTypes.ts (make gen). Do not edit by hand.
 * A member with a default is required: the parsed design has it filled in.
 */

/**
 * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
 */
export type Code = string;

/**
 * A clinical study's design for Study Data Exchange: its sites, visit schedule, eCRF forms, edit checks and how FHIR data fills the forms. Written in YAML and loaded with `sdx study load <file>`. All keys are snake_case. Besides this schema the loader checks: codes are unique (site numbers, visit codes, form codes, field codes within a form, column codes within a table, option codes within a field, edit check codes); each visit's forms exist and each form is used by at least one visit; `min` does not exceed `max`; type-specific members appear only on their types; edit checks and FHIR mappings name existing forms, fields and columns.
 */
export interface StudyDesign {
  /**
   * Study code: the study's identifier in the API (`/api/v1/studies/<code>`). 1-32 letters, digits, `_` or `-`.
   */
  code: string;
  /**
   * Full study title.
   */
  name: string;
  /**
   * Treatment allocation is hidden: forms with `team: unblinded` are visible only to unblinded users. Default false.
   */
  blinded: boolean;
  /**
   * Data may be entered for a subject only after their informed consent is recorded. Default false.
   */
  consent_required: boolean;
  /**
   * New subjects may be enrolled. Default true.
   */
  enrolment_open: boolean;
  /**
   * A visit date outside its visit's window (counted from the enrolment date) opens an automatic query and makes the record's result `warn`, whichever way the data comes (API, FHIR, portal). The visit date of a form is the `date_field` its FHIR observation mappings name. On by default; a study may set false to switch the check off (for example a registry without a visit schedule it enforces). Default true.
   */
  visit_window_queries: boolean;
  /**
   * A change to a saved value (changed or cleared by a record sent with `update: true`, by a FHIR import's `replace` or picked tie, or by any other writer) must give a reason for change, which the audit trail keeps with each changed value; without one the record is refused (`error` / `reason_required`) and nothing of it is saved. Filling an empty place of a saved form and the first entry of a form need no reason. Default false.
   */
  reason_required_on_update: boolean;
  /**
   * Template of the subject number assigned at enrolment. `{site}` is the site number and `{seq:N}` the subject's sequence number within the site, zero-padded to N digits (1-9); each must occur exactly once and no other `{...}` placeholder is allowed. Default `{site}-{seq:3}`, giving `01-001`.
   */
  subject_format: string;
  /**
   * The sites (hospitals, clinics) that enrol subjects. Site numbers are unique.
   *
   * @minItems 1
   */
  sites: Site[];
  /**
   * The visit schedule, in display order. Visit codes are unique.
   *
   * @minItems 1
   */
  visits: Visit[];
  /**
   * The eCRF forms. Form codes are unique and each form is used by at least one visit.
   *
   * @minItems 1
   */
  forms: Form[];
  /**
   * Cross-field checks run whenever a form record is saved. Edit check codes are unique. Default none.
   */
  edit_checks: EditCheck[];
  fhir_mapping: FhirMapping;
}
/**
 * A site that enrols subjects.
 */
export interface Site {
  /**
   * Site number, 1-8 letters or digits; a string, so quote numbers like `"01"` in YAML. It is the `{site}` of the subject number.
   */
  number: string;
  /**
   * Site name.
   */
  name: string;
}
/**
 * A visit of the schedule and the forms collected at it.
 */
export interface Visit {
  /**
   * Visit code, unique in the study.
   */
  code: string;
  /**
   * Visit name shown to users.
   */
  name: string;
  /**
   * Planned day relative to enrolment (day 0); negative before it. Null or omitted for visits without a planned day, such as unscheduled visits. Default null.
   */
  planned_day: number | null;
  window: Window;
  /**
   * The visit may occur any number of times for a subject (for example unscheduled visits). Default false.
   */
  repeating: boolean;
  /**
   * Codes of the forms collected at this visit, in display order; each must exist and appear once.
   *
   * @minItems 1
   */
  forms: Code[];
}
/**
 * Days before and after the planned day within which the visit counts as on time; only with a `planned_day`. Default `{before: 0, after: 0}`.
 */
export interface Window {
  /**
   * Days before the planned day the visit may take place. Default 0.
   */
  before: number;
  /**
   * Days after the planned day the visit may take place. Default 0.
   */
  after: number;
}
/**
 * An eCRF form: the values one record holds.
 */
export interface Form {
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  code: string;
  /**
   * Form name shown to users.
   */
  name: string;
  /**
   * Who may see the form's records: `all` users, or only `unblinded` ones (treatment allocation, drug accountability) when the study is blinded. Default `all`.
   */
  team: "all" | "unblinded";
  /**
   * The form's fields, in display order. Field codes are unique within the form.
   *
   * @minItems 1
   */
  fields: Field[];
}
/**
 * A question on a form.
 */
export interface Field {
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  code: string;
  /**
   * Question text shown on the eCRF.
   */
  label: string;
  /**
   * Value type. `integer` and `decimal` are numbers; `date` is YYYY-MM-DD and `time` is HH:MM; `choice` holds one option code and `multichoice` a list of option codes; `yesno` is a boolean; `text` is free text; `table` is a list of rows whose members are `columns`.
   */
  type: "integer" | "decimal" | "date" | "time" | "choice" | "multichoice" | "yesno" | "text" | "table";
  /**
   * UCUM unit of the value (for example `mm[Hg]`, `mmol/L`, `10*3/uL`); integer and decimal fields only. A field that an observation mapping fills must have one, so imported values can be converted to it.
   */
  unit?: string;
  /**
   * Smallest accepted value, inclusive; integer and decimal fields only. Must not exceed `max`.
   */
  min?: number;
  /**
   * Largest accepted value, inclusive; integer and decimal fields only.
   */
  max?: number;
  /**
   * Number of decimal places kept; decimal fields only.
   */
  decimals?: number;
  /**
   * The field must be filled before the record is complete (for a table: at least one row). Default false.
   */
  required: boolean;
  /**
   * The answers of a `choice` or `multichoice` field, in display order; required for those types and not allowed for others. Option codes are unique within the field.
   */
  options?: Option[];
  /**
   * The columns of a `table` field, in display order; required for tables and not allowed for other types. Column codes are unique within the table.
   */
  columns?: Column[];
}
/**
 * One answer of a choice or multichoice field.
 */
export interface Option {
  /**
   * The stored value: a string of 1-32 letters, digits, `_`, `.` or `-` (quote numeric codes like `"1"` in YAML), unique within the field.
   */
  code: string;
  /**
   * The answer text shown on the eCRF.
   */
  label: string;
}
/**
 * A column of a table field: a field that is not itself a table and has no columns.
 */
export interface Column {
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  code: string;
  /**
   * Question text shown on the eCRF.
   */
  label: string;
  /**
   * Value type of the column: any field type except `table` (tables do not nest).
   */
  type: "integer" | "decimal" | "date" | "time" | "choice" | "multichoice" | "yesno" | "text" | "table";
  /**
   * UCUM unit of the value (for example `mm[Hg]`, `mmol/L`, `10*3/uL`); integer and decimal fields only. A field that an observation mapping fills must have one, so imported values can be converted to it.
   */
  unit?: string;
  /**
   * Smallest accepted value, inclusive; integer and decimal fields only. Must not exceed `max`.
   */
  min?: number;
  /**
   * Largest accepted value, inclusive; integer and decimal fields only.
   */
  max?: number;
  /**
   * Number of decimal places kept; decimal fields only.
   */
  decimals?: number;
  /**
   * The column must be filled in every row. Default false.
   */
  required: boolean;
  /**
   * The answers of a `choice` or `multichoice` field, in display order; required for those types and not allowed for others. Option codes are unique within the field.
   */
  options?: Option[];
}
/**
 * A cross-field check over the values of one form record, evaluated on every save.
 */
export interface EditCheck {
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  code: string;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  form: string;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  field: string;
  /**
   * A JSON Logic rule (https://jsonlogic.com) over the record's values, keyed by field code; it must hold (be truthy), and a falsy result fails the check. Every `var` (and every name in `missing` / `missing_some`) must name a field of the form; inside `all`, `some`, `none`, `map` and `filter` over a table field, `var` names a column of that table. Guard against empty values yourself, for example `{"or": [{"missing": ["dbp", "sbp"]}, {"<": [{"var": "dbp"}, {"var": "sbp"}]}]}`.
   */
  rule: {};
  /**
   * English text of the query or refusal.
   */
  message: string;
  /**
   * Russian text of the query or refusal; the English text is used when omitted.
   */
  message_ru?: string;
  /**
   * What a failed check does: `query` saves the record and opens a query on the field; `reject` refuses the record. Default `query`.
   */
  action: "query" | "reject";
}
/**
 * How resources sent to the FHIR import fill the forms. Default: nothing is imported.
 */
export interface FhirMapping {
  /**
   * Observation codes and the field each fills. One code may fill several fields (for example body weight on two forms), and several codes may fill one field. Default none.
   */
  observations: ObservationMapping[];
  /**
   * Where Condition resources go, one table row each. Default none.
   */
  conditions: ConditionMapping[];
  /**
   * Where MedicationRequest and MedicationStatement resources go, one table row each. Default none.
   */
  medications: MedicationMapping[];
}
/**
 * Fills one field from Observations with any of the given codes. A code matches either the Observation's own code or the code of one of its components: that is how systolic and diastolic pressure (8480-6, 8462-4) come out of a blood-pressure panel (85354-9, or 55284-4 in older Synthea output), which carries them as components and has no value of its own.
 */
export interface ObservationMapping {
  /**
   * The codes that fill the field, matched on the Observation's code or a component's code. List every code variant that hospitals send for the quantity (haematocrit as 4544-3 and 20570-8, for example) in a unit convertible to the field's: to add one, append `{system, code}` here. A panel needs no entry of its own: its components, and its members (hasMember, Observations of their own), match by their codes.
   *
   * @minItems 1
   */
  codes: Coding[];
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  form: string;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  field: string;
  /**
   * Which Observation is taken when several fall within the visit window: `nearest` to the visit's planned day (between two days equally far, the later measurement), the `first` or `last` by time, or the one with the `min` or `max` value. Default `nearest`. When the rule cannot choose between different values (the same instant; an Observation dated by the day only counts as the start of that day), the place is a tie: nothing is proposed or saved for it, and the site team picks one of the values on the review page. Equal values at the same instant are no tie.
   */
  pick: "nearest" | "first" | "last" | "min" | "max";
  /**
   * Molar mass of the substance in g/mol, for converting between mass and substance concentrations (for example glucose in mg/dL to mmol/L with 180.156); integer and decimal fields only.
   */
  molar_mass?: number;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  date_field?: string;
}
/**
 * A code in a code system, as in a FHIR Coding.
 */
export interface Coding {
  /**
   * Code system URI, for example `http://loinc.org`.
   */
  system: string;
  /**
   * The code in that system, for example LOINC `"8480-6"`; a string.
   */
  code: string;
}
/**
 * Copies each imported Condition into one row of a table field. Placement: a Condition with onset on or before the enrolment day (or without an onset) goes to the first visit having the form (screening in the demo study); one with onset after the enrolment day never goes to this table, only to `onset_after_enrolment` when given.
 */
export interface ConditionMapping {
  /**
   * Code systems (FHIR system URIs) whose codings are taken from the Condition's code, in order of preference: the first coding in one of these systems supplies `code` and `display`.
   *
   * @minItems 1
   */
  systems: string[];
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  form: string;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  field: string;
  /**
   * Which column receives which part of the resource: keys are column codes of the table, values are sources. Sources: `display` and `code` of the chosen coding, `onset` and `abatement` dates, and `ongoing` (true while the condition has no abatement). Date sources need a date or text column, `ongoing` a yesno column, and the others a text or choice column.
   */
  columns: {
    [k: string]: "display" | "code" | "onset" | "abatement" | "ongoing";
  };
  /**
   * Optional: where a Condition whose onset is after the enrolment day goes instead of `field`. Such a condition is not medical history but something the site must look at as a possible adverse event: it is offered in this table (the adverse events in the demo study), at the next visit having `form` whose window ends on or after the onset, as a candidate for the site's review only. `mode=save` never saves it. Without this member, a condition with onset after the enrolment day has no place (skipped, `no_visit`). A condition with onset on or before the enrolment day, or without an onset date, counts as history.
   */
  onset_after_enrolment?: {
    /**
     * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
     */
    form: string;
    /**
     * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
     */
    field: string;
    /**
     * Which column receives which part of the resource: keys are column codes of the table, values are sources. Sources: `display` and `code` of the chosen coding, `onset` and `abatement` dates, and `ongoing` (true while the condition has no abatement). Date sources need a date or text column, `ongoing` a yesno column, and the others a text or choice column.
     */
    columns: {
      [k: string]: "display" | "code" | "onset" | "abatement" | "ongoing";
    };
  };
}
/**
 * Copies each imported medication into one row of a table field.
 */
export interface MedicationMapping {
  /**
   * Code systems (FHIR system URIs) whose codings are taken from the medication's code, in order of preference: the first coding in one of these systems supplies `code` and `display`.
   *
   * @minItems 1
   */
  systems: string[];
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  form: string;
  /**
   * A code for a visit, form, field, column or edit check: a lower-case letter, then up to 31 lower-case letters, digits or `_`.
   */
  field: string;
  /**
   * Which column receives which part of the resource: keys are column codes of the table, values are sources. Sources: `display` and `code` of the chosen coding of the medication, `start` and `end` dates of the period it was taken or prescribed for, `dosage` as text, `status`, and `ongoing` (true while the status says it is taken and no end date is given). A medication whose status says it ended (`stopped`, `completed`) without an end date has `end` `UNK`, the eCRF's mark for an unknown date, never empty, and `ongoing` false; an `active` one stays open. An `entered-in-error`, `cancelled` or `draft` request and an `entered-in-error` or `not-taken` statement are not imported. Placement: a medication started before enrolment goes to the first visit having the form (screening); one started on or after enrolment to the next visit having the form whose window ends on or after its start (day 51 goes to week 12 in the demo study, not to the visit whose window holds the day), and none after the last such window. Date sources need a date or text column, `ongoing` a yesno column, and the others a text or choice column.
   */
  columns: {
    [k: string]: "display" | "code" | "start" | "end" | "dosage" | "status" | "ongoing";
  };
}
