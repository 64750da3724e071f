import type { components } from '../../../generated/openapi.js';
import type { Study } from '../../domain/stores.js';
import type { ColumnDef, FieldDef, StudyDesign } from '../../domain/studyDesign/types.js';

type Wire = components['schemas'];

function toColumn(f: ColumnDef): Wire['TableColumn'] {
  return {
    code: f.code,
    label: f.label,
    type: f.type,
    unit: 'unit' in f ? f.unit ?? null : null,
    min: 'min' in f ? f.min ?? null : null,
    max: 'max' in f ? f.max ?? null : null,
    decimals: 'decimals' in f ? f.decimals ?? null : null,
    options: 'options' in f ? f.options.map((o) => ({ code: o.code, label: o.label })) : null,
    required: f.required,
  };
}

function toField(f: FieldDef): Wire['Field'] {
  if (f.type === 'table') {
    return { code: f.code, label: f.label, type: 'table', unit: null, min: null, max: null, decimals: null, options: null, required: f.required, columns: f.columns.map(toColumn) };
  }
  return { ...toColumn(f), columns: null };
}

/** The design call's body: the design as the key may see it, in the wire shape of the spec. */
export function toStudyDesignDto(study: Study, design: StudyDesign): Wire['StudyDesign'] {
  return {
    study: {
      code: study.code, name: study.name, blinded: study.blinded, consent_required: study.consentRequired,
      reason_required_on_update: design.reason_required_on_update ?? false,
      enrolment_open: study.enrolmentOpen, locked: study.locked, subject_format: study.subjectFormat,
    },
    sites: design.sites.map((s) => ({ number: s.number, name: s.name })),
    visits: design.visits.map((v, order) => ({
      code: v.code, name: v.name, order: order + 1, repeating: v.repeating, planned_day: v.planned_day,
      window_before: v.window.before, window_after: v.window.after, forms: v.forms,
    })),
    forms: design.forms.map((f) => ({ code: f.code, name: f.name, team: f.team, fields: f.fields.map(toField) })),
    edit_checks: design.edit_checks.map((c) => ({ code: c.code, form: c.form, field: c.field, message: c.message, action: c.action })),
  };
}
