/**
 * The shape of a study design after `parseStudyDesign` has validated it and filled its defaults.
 *
 * The file format's JSON Schema (`studies/design.schema.json`, which documents every member) is the source
 * of truth: `generated/studyDesign.d.ts` is made from it (make gen), and the types here are that file's,
 * with two refinements the schema does not state in its types: a field is a union discriminated by its
 * `type` (which members each type may have is checked by the parse), and an edit check's rule is a JSON
 * Logic object. Property names are the YAML file's snake_case keys, unchanged.
 */
import type * as File from '../../../generated/studyDesign.js';

type DesignCode = File.Code;
export type VisitDef = File.Visit;
export type ChoiceOption = File.Option;
export type ObservationMapping = File.ObservationMapping;
export type ObservationPick = ObservationMapping['pick'];
export type ConditionMapping = File.ConditionMapping;
type MedicationMapping = File.MedicationMapping;
export type ConditionSource = ConditionMapping['columns'][string];
export type MedicationSource = MedicationMapping['columns'][string];

/** Copies each resource into one row of a table field; `columns` maps column code to source. */
export type TableMapping<Source extends string> = Pick<ConditionMapping, 'systems' | 'form' | 'field'> & { columns: Record<DesignCode, Source> };

export type StudyDesign = Omit<File.StudyDesign, 'forms' | 'edit_checks'> & { forms: FormDef[]; edit_checks: EditCheckDef[] };

export type FormDef = Omit<File.Form, 'fields'> & { fields: FieldDef[] };

/** A field of `types` with the members of the schema's field that such a field may have. */
type FieldOf<Types extends File.Field['type'], Members extends keyof File.Field = never> =
  Pick<File.Field, 'code' | 'label' | 'required' | Members> & { type: Types };

export type IntegerFieldDef = FieldOf<'integer', 'unit' | 'min' | 'max'>;
export type DecimalFieldDef = FieldOf<'decimal', 'unit' | 'min' | 'max' | 'decimals'>;
/** `choice` stores one option code, `multichoice` a list of them. */
type ChoiceFieldDef = FieldOf<'choice' | 'multichoice'> & { options: ChoiceOption[] };
/** Field types with no type-specific members: `date` is YYYY-MM-DD, `time` HH:MM, `yesno` a boolean. */
type PlainFieldDef = FieldOf<'date' | 'time' | 'yesno' | 'text'>;
/** A column of a table: any field but a table. */
export type ColumnDef = IntegerFieldDef | DecimalFieldDef | ChoiceFieldDef | PlainFieldDef;
export type TableFieldDef = FieldOf<'table'> & { columns: ColumnDef[] };
/** A question on a form, discriminated by `type`. */
export type FieldDef = ColumnDef | TableFieldDef;
export type FieldType = FieldDef['type'];

/** A JSON Logic rule (https://jsonlogic.com): an object with one operator key. */
type JsonLogicRule = Record<string, unknown>;
export type EditCheckDef = Omit<File.EditCheck, 'rule'> & { rule: JsonLogicRule };
