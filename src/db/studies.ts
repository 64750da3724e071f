import type { Knex } from 'knex';
import type { DesignIds, Study, StudySettings, StudyStore, Site, StudyStructure } from '../domain/stores.js';
import type { StudyDesign } from '../domain/studyDesign/types.js';
import { returnedRow } from './returnedRow.js';

const TABLE = 'studies';

export interface StudyRecord {
  id: number; code: string; name: string; blinded: boolean; consent_required: boolean; enrolment_open: boolean;
  locked: boolean; api_enabled: boolean; subject_format: string; design: StudyDesign; design_hash: string;
}

export function rowToStudy(r: StudyRecord): Study {
  return {
    id: r.id, code: r.code, name: r.name, blinded: r.blinded, consentRequired: r.consent_required,
    enrolmentOpen: r.enrolment_open, locked: r.locked, apiEnabled: r.api_enabled, subjectFormat: r.subject_format,
    design: r.design, designHash: r.design_hash,
  };
}

async function insertDesign(db: Knex, design: StudyDesign, designHash: string): Promise<number> {
  const { id: studyId } = returnedRow(await db(TABLE).insert({
    code: design.code, name: design.name, blinded: design.blinded, consent_required: design.consent_required,
    enrolment_open: design.enrolment_open, subject_format: design.subject_format,
    design: JSON.stringify(design), design_hash: designHash,
  }).returning<{ id: number }[]>('id'));
  await db('sites').insert(design.sites.map((s) => ({ study_id: studyId, number: s.number, name: s.name })));
  const formIds = new Map<string, number>();
  for (const [position, form] of design.forms.entries()) {
    const { id } = returnedRow(await db('forms').insert({ study_id: studyId, code: form.code, name: form.name, team: form.team, position }).returning<{ id: number }[]>('id'));
    formIds.set(form.code, id);
    await db('fields').insert(form.fields.map((f, i) => ({
      form_id: id, code: f.code, label: f.label, type: f.type, position: i, required: f.required,
      unit: 'unit' in f ? f.unit ?? null : null,
      min: 'min' in f ? f.min ?? null : null,
      max: 'max' in f ? f.max ?? null : null,
      decimals: 'decimals' in f ? f.decimals ?? null : null,
      options: 'options' in f ? JSON.stringify(f.options) : null,
      columns: f.type === 'table' ? JSON.stringify(f.columns) : null,
    })));
  }
  for (const [position, visit] of design.visits.entries()) {
    const { id } = returnedRow(await db('visits').insert({
      study_id: studyId, code: visit.code, name: visit.name, position, repeating: visit.repeating,
      planned_day: visit.planned_day, window_before: visit.window.before, window_after: visit.window.after,
    }).returning<{ id: number }[]>('id'));
    await db('visit_forms').insert(visit.forms.map((code, i) => ({ visit_id: id, form_id: formIds.get(code), position: i })));
  }
  if (design.edit_checks.length > 0) {
    await db('edit_checks').insert(design.edit_checks.map((c) => ({
      study_id: studyId, form_id: formIds.get(c.form), code: c.code, field_code: c.field, rule: JSON.stringify(c.rule),
      message: c.message, message_ru: c.message_ru ?? null, action: c.action,
    })));
  }
  const mappings = [
    ...design.fhir_mapping.observations.map((rule) => ({ kind: 'observation', rule })),
    ...design.fhir_mapping.conditions.map((rule) => ({ kind: 'condition', rule })),
    ...design.fhir_mapping.medications.map((rule) => ({ kind: 'medication', rule })),
  ];
  if (mappings.length > 0) {
    await db('fhir_mappings').insert(mappings.map((m, position) => ({ study_id: studyId, kind: m.kind, position, rule: JSON.stringify(m.rule) })));
  }
  return studyId;
}

/**
 * SQL giving the structure of the study aliased `st` as one jsonb value, for a query that reads the
 * study row anyway (the API key's query): sites by number, visit and form ids by code.
 */
export const STRUCTURE_SQL = `jsonb_build_object(
  'sites', (select coalesce(jsonb_agg(jsonb_build_object('id', s.id, 'number', s.number, 'name', s.name) order by s.number), '[]') from sites s where s.study_id = st.id),
  'visits', (select coalesce(jsonb_object_agg(v.code, v.id), '{}') from visits v where v.study_id = st.id),
  'forms', (select coalesce(jsonb_object_agg(f.code, f.id), '{}') from forms f where f.study_id = st.id))`;

/** The structure as STRUCTURE_SQL gives it. */
export interface StructureJson { sites: Site[]; visits: Record<string, number>; forms: Record<string, number> }

export function structureOf(json: StructureJson): StudyStructure {
  return { sites: json.sites, ids: { visits: new Map(Object.entries(json.visits)), forms: new Map(Object.entries(json.forms)) } };
}

export function studyStore(db: Knex): StudyStore {
  return {
    async findByCode(code) {
      const row = await db(TABLE).where({ code }).first<StudyRecord | undefined>();
      return row ? rowToStudy(row) : undefined;
    },
    insertDesign: (design, hash) => insertDesign(db, design, hash),
    async updateSettings(studyId, settings: StudySettings) {
      const changes: Record<string, unknown> = { updated_at: db.fn.now() };
      if (settings.apiEnabled !== undefined) changes.api_enabled = settings.apiEnabled;
      if (settings.enrolmentOpen !== undefined) changes.enrolment_open = settings.enrolmentOpen;
      if (settings.locked !== undefined) changes.locked = settings.locked;
      await db(TABLE).where({ id: studyId }).update(changes);
    },
    async sites(study): Promise<Site[]> {
      if (study.structure) return study.structure.sites;
      return db('sites').where({ study_id: study.id }).orderBy('number').select<Site[]>('id', 'number', 'name');
    },
    async designIds(study) {
      if (study.structure) return study.structure.ids;
      // One statement, not one per table: inside a transaction the two would run one after the other
      // anyway, and every records call, read page and FHIR import asks for these ids.
      const { rows } = await db.raw<{ rows: { kind: 'visit' | 'form'; id: number; code: string }[] }>(
        `select 'visit' as kind, id, code from visits where study_id = ? union all select 'form', id, code from forms where study_id = ?`,
        [study.id, study.id],
      );
      const ids: DesignIds = { visits: new Map<string, number>(), forms: new Map<string, number>() };
      for (const r of rows) (r.kind === 'visit' ? ids.visits : ids.forms).set(r.code, r.id);
      return ids;
    },
    async takeNextSeq(siteId) {
      const { last_seq: seq } = returnedRow(await db('sites').where({ id: siteId }).increment('last_seq', 1).returning<{ last_seq: number }[]>('last_seq'));
      return seq;
    },
  };
}

/** Every study's code, for jobs that visit each study (the audit checkpoints). */
export async function listStudyCodes(db: Knex): Promise<string[]> {
  return db(TABLE).orderBy('code').pluck<string[]>('code');
}
