import { authorOf, type Actor, type RecordSource } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError, type FieldError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import type { AuditEntry, AuditStore, PatientStore, QueryStore, RecordKey, RecordStore, StoredRecord, StudyRow, StudyStore } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';
import type { EditCheckDef, FormDef, VisitDef } from '../studyDesign/types.js';
import { planQueries, queryCauses, type QueryCause } from './autoQueries.js';
import { failingChecks } from './editChecks.js';
import {
  changedFields, completenessIssues, EMPTY_CONTENT, mergeContent, typedValues,
  type FieldIssue, type NotDoneMark, type RecordContent,
} from './recordContent.js';

/** One record as a client sends it (interface description, "Record (form instance), as sent"). */
export interface RecordInput {
  subject: string;
  visit: string;
  form: string;
  values?: Record<string, string>;
  not_done?: Record<string, NotDoneMark>;
  tables?: Record<string, Record<string, string>[]>;
  instance?: number;
  status?: 'complete' | 'draft';
  update?: boolean;
}

/**
 * Every code a per-record result can carry (spec/openapi.yaml, "Sending forms"): the message
 * catalogues hold an English and a Russian text for each (test/unit/recordsMessages.test.ts).
 */
export const RECORD_RESULT_CODES = [
  'saved', 'unchanged', 'validated', 'saved_with_queries', 'saved_as_draft', 'already_filled', 'unknown_subject',
  'team_not_allowed', 'consent_missing', 'form_not_in_visit', 'invalid_instance', 'unknown_field', 'invalid_value', 'edit_check_failed',
] as const;

export type RecordResultCode = (typeof RECORD_RESULT_CODES)[number];

export interface RecordOutcome {
  index: number;
  status: 'ok' | 'warn' | 'skip' | 'error';
  code: RecordResultCode;
  params: Record<string, unknown>;
  recordId: number | null;
  queriesOpened: number;
  issues: FieldIssue[];
  /** With `fillOnly`: fields left alone because they already held something. */
  notFilled: string[];
}

/** What the writer may reach: its sites, and whether it may see unblinded-team forms. */
export interface WriteAccess {
  siteIds: number[];
  unblinded: boolean;
}

type Stores = { studies: StudyStore; patients: PatientStore; records: RecordStore; queries: QueryStore; audit: AuditStore };

const keyOf = (k: RecordKey) => `${k.patientId}|${k.visitId}|${k.formId}|${k.instance}`;

function refused(index: number, code: RecordResultCode, params: Record<string, unknown> = {}, issues: FieldIssue[] = []): RecordOutcome {
  return { index, status: 'error', code, params, recordId: null, queriesOpened: 0, issues, notFilled: [] };
}

/** Records naming a form or visit the study does not have refuse the whole request, before anything is read or written. */
function unknownDesignErrors(study: StudyRow, inputs: RecordInput[]): FieldError[] {
  const forms = new Set(study.design.forms.map((f) => f.code));
  const visits = new Set(study.design.visits.map((v) => v.code));
  return inputs.flatMap((r, i) => [
    ...(visits.has(r.visit) ? [] : [{ pointer: `/records/${i}/visit`, code: 'unknown_visit', params: { visit: r.visit } }]),
    ...(forms.has(r.form) ? [] : [{ pointer: `/records/${i}/form`, code: 'unknown_form', params: { form: r.form } }]),
  ]);
}

interface Evaluation {
  content: RecordContent;
  status: 'complete' | 'draft';
  changes: { field: string; oldValue: string | null; newValue: string | null }[];
  statusChanged: boolean;
  before: QueryCause[];
  after: QueryCause[];
}

/** Applies the record's content onto the saved version and runs every data-entry rule; nothing is written here. */
function evaluate(form: FormDef, checks: EditCheckDef[], current: StoredRecord | undefined, input: RecordInput): Evaluation | { code: RecordResultCode; issues: FieldIssue[] } {
  const saved: RecordContent = current ? { values: current.values, notDone: current.notDone, tables: current.tables } : EMPTY_CONTENT;
  const { content, issues } = mergeContent(form, saved, input);
  if (issues.some((i) => i.code === 'unknown_field')) return { code: 'unknown_field', issues };
  const status = input.status ?? 'complete';
  // A field whose value was refused is empty now; its own issue says enough, without `required` on top.
  const refusedFields = new Set(issues.map((i) => i.field));
  const all = [...issues, ...(status === 'complete' ? completenessIssues(form, content).filter((i) => !refusedFields.has(i.field)) : [])];
  if (all.length > 0) return { code: 'invalid_value', issues: all };
  const rejecting = failingChecks(checks.filter((c) => c.action === 'reject'), typedValues(form, content));
  if (rejecting.length > 0) {
    return {
      code: 'edit_check_failed',
      issues: rejecting.map((c) => ({ field: c.field, code: `edit_check:${c.code}`, params: { message: c.message, message_ru: c.message_ru ?? c.message } })),
    };
  }
  return {
    content,
    status,
    changes: changedFields(saved, content),
    statusChanged: current !== undefined && current.status !== status,
    before: current ? queryCauses(form, checks, saved) : [],
    after: queryCauses(form, checks, content),
  };
}

/**
 * The one path by which form data is saved, whether it comes from an API key, a FHIR import or the
 * portal: edit checks, the consent gate, automatic queries and the audit trail all run here
 * (interface description, "Records call rules"). Each record gets its own outcome in request order;
 * a bad record is refused alone. Call it inside one transaction: a record's values, queries and
 * audit rows are written together, and with `validateOnly` nothing at all is written.
 */
export async function submitRecords(
  stores: Stores,
  actor: Actor,
  access: WriteAccess,
  study: StudyRow,
  inputs: RecordInput[],
  options: { validateOnly: boolean; source: RecordSource; fillOnly?: boolean },
): Promise<RecordOutcome[]> {
  if (study.locked) throw new DomainError('study_locked');
  const unknown = unknownDesignErrors(study, inputs);
  if (unknown.length > 0) {
    const indexes = [...new Set(unknown.map((e) => Number(e.pointer.split('/')[2])))];
    throw new DomainError('unknown_form_or_visit', { indexes }, unknown);
  }
  const design = study.design;
  const forms = new Map(design.forms.map((f) => [f.code, f]));
  const visits = new Map<string, VisitDef>(design.visits.map((v) => [v.code, v]));
  const ids = await stores.studies.designIds(study.id);
  const patients = new Map((await stores.patients.findBySubjects(study.id, [...new Set(inputs.map((r) => r.subject))])).map((p) => [p.subject, p]));
  const keyFor = (r: RecordInput): RecordKey | undefined => {
    const patient = patients.get(r.subject);
    return patient && { patientId: patient.id, visitId: ids.visits.get(r.visit)!, formId: ids.forms.get(r.form)!, instance: r.instance ?? 1 };
  };
  const existing = new Map((await stores.records.findByKeys(inputs.flatMap((r) => keyFor(r) ?? []))).map((rec) => [keyOf(rec), rec]));

  const outcomes: RecordOutcome[] = [];
  for (const [index, input] of inputs.entries()) {
    const patient = patients.get(input.subject);
    // A patient at another site is reported exactly like one that does not exist: a key learns nothing outside its sites.
    if (!patient || !access.siteIds.includes(patient.siteId)) { outcomes.push(refused(index, 'unknown_subject', { subject: input.subject })); continue; }
    const visit = visits.get(input.visit)!;
    const form = forms.get(input.form)!;
    // Before any check that would tell where the form is planned: a blinded key learns nothing about it.
    if (formHidden(study, form, access.unblinded)) { outcomes.push(refused(index, 'team_not_allowed', { form: form.code })); continue; }
    if (!consentAllowsEntry(study.consentRequired, patient.consent)) { outcomes.push(refused(index, 'consent_missing', { subject: input.subject })); continue; }
    if (!visit.forms.includes(form.code)) { outcomes.push(refused(index, 'form_not_in_visit', { form: form.code, visit: visit.code })); continue; }
    const instance = input.instance ?? 1;
    if (!visit.repeating && instance !== 1) { outcomes.push(refused(index, 'invalid_instance', { visit: visit.code })); continue; }
    const key = keyFor(input)!;
    const checks = design.edit_checks.filter((c) => c.form === form.code);
    const saved = existing.get(keyOf(key));
    if (saved && !input.update) { outcomes.push(skipped(index, saved.id)); continue; }

    /** Evaluates the record over `current` (the saved version, row-locked when writing) and writes it. */
    const saveOver = async (current: StoredRecord | undefined): Promise<RecordOutcome> => {
      const { input: effective, notFilled } = options.fillOnly ? emptyPlacesOnly(current, input) : { input, notFilled: [] as string[] };
      const evaluation = evaluate(form, checks, current, effective);
      if (!('content' in evaluation)) return refused(index, evaluation.code, {}, evaluation.issues);
      if (current && evaluation.changes.length === 0 && !evaluation.statusChanged) {
        return { index, status: 'ok', code: 'unchanged', params: {}, recordId: current.id > 0 ? current.id : null, queriesOpened: 0, issues: [], notFilled };
      }
      const plan = planQueries(evaluation.before, evaluation.after, current && current.id > 0 ? await stores.queries.openForRecord(current.id) : []);
      if (options.validateOnly) {
        // Later records of the request see this one as if it were saved, exactly as they would without validate-only.
        existing.set(keyOf(key), { id: current?.id ?? -1, ...key, status: evaluation.status, ...evaluation.content });
        return outcomeOfSave(index, 'validated', current && current.id > 0 ? current.id : null, evaluation.status, plan.toOpen);
      }
      let recordId: number;
      if (current) {
        recordId = current.id;
        await stores.records.update(recordId, { status: evaluation.status, ...evaluation.content });
      } else {
        const inserted = await stores.records.insertIfAbsent({
          ...key, studyId: study.id, siteId: patient.siteId, source: options.source, status: evaluation.status, ...evaluation.content,
        });
        if (inserted === undefined) {
          // Another writer saved this form instance meanwhile: it is filled now, exactly as if it had been before.
          const winner = (await stores.records.lockByKey(key))!;
          return input.update ? saveOver(winner) : skipped(index, winner.id);
        }
        recordId = inserted;
      }
      await writeTrail(stores, actor, study, { recordId, patientId: patient.id, siteId: patient.siteId, isNew: !current, evaluation, plan });
      existing.set(keyOf(key), { id: recordId, ...key, status: evaluation.status, ...evaluation.content });
      return { ...outcomeOfSave(index, evaluation.status === 'draft' ? 'saved_as_draft' : 'saved', recordId, evaluation.status, plan.toOpen), notFilled };
    };
    outcomes.push(await saveOver(saved && !options.validateOnly ? await stores.records.lockByKey(key) : saved));
  }
  return outcomes;
}

/**
 * Keeps only what fills an empty place of the saved record (a FHIR import in save mode never changes
 * a saved value); it is applied to the row-locked record, so a value someone saved meanwhile is kept.
 */
function emptyPlacesOnly(current: StoredRecord | undefined, input: RecordInput): { input: RecordInput; notFilled: string[] } {
  if (!current) return { input, notFilled: [] };
  const filled = (code: string) => current.values[code] !== undefined || current.notDone[code] !== undefined || (current.tables[code]?.length ?? 0) > 0;
  const values = Object.entries(input.values ?? {});
  const tables = Object.entries(input.tables ?? {});
  return {
    input: {
      ...input,
      status: current.status,
      values: Object.fromEntries(values.filter(([code]) => !filled(code))),
      tables: Object.fromEntries(tables.filter(([code]) => !filled(code))),
      not_done: {},
    },
    notFilled: [...values, ...tables].map(([code]) => code).filter(filled),
  };
}

function skipped(index: number, recordId: number): RecordOutcome {
  return { index, status: 'skip', code: 'already_filled', params: {}, recordId: recordId > 0 ? recordId : null, queriesOpened: 0, issues: [], notFilled: [] };
}

/** The outcome of a saved (or, with validate-only, savable) record: `warn` when it opened queries or is a draft. */
function outcomeOfSave(index: number, code: 'saved' | 'saved_as_draft' | 'validated', recordId: number | null, status: 'complete' | 'draft', opened: QueryCause[]): RecordOutcome {
  const warn = opened.length > 0 || status === 'draft';
  const finalCode = code === 'validated' ? code : opened.length > 0 ? 'saved_with_queries' : code;
  return {
    index,
    status: warn ? 'warn' : 'ok',
    code: finalCode,
    params: { queries: opened.length, draft: status === 'draft' },
    recordId,
    queriesOpened: opened.length,
    issues: opened.map((q) => ({ field: q.field, code: q.origin === 'range' ? 'out_of_range' : `edit_check:${q.checkCode}`, params: q.params })),
    notFilled: [],
  };
}

/** Audit rows for each saved or changed value, the status change, and the queries opened and closed. */
async function writeTrail(
  stores: Stores,
  actor: Actor,
  study: StudyRow,
  w: { recordId: number; patientId: number; siteId: number; isNew: boolean; evaluation: Evaluation; plan: ReturnType<typeof planQueries> },
): Promise<void> {
  const base = { patientId: w.patientId, recordId: w.recordId };
  const entries: AuditEntry[] = w.evaluation.changes.map((c) =>
    auditEntry(actor, study.id, { ...base, action: w.isNew ? 'record.value_set' : 'record.value_changed', fieldCode: c.field, oldValue: c.oldValue, newValue: c.newValue }),
  );
  if (w.evaluation.statusChanged) entries.push(auditEntry(actor, study.id, { ...base, action: 'record.status_changed', newValue: w.evaluation.status }));
  if (w.plan.toOpen.length > 0) {
    const ids = await stores.queries.insert(w.plan.toOpen.map((q) => ({
      studyId: study.id, recordId: w.recordId, patientId: w.patientId, siteId: w.siteId, fieldCode: q.field, origin: q.origin,
      checkCode: q.checkCode, message: q.message, openedBy: authorOf(actor),
    })));
    ids.forEach((id, i) => entries.push(auditEntry(actor, study.id, { ...base, action: 'query.opened', fieldCode: w.plan.toOpen[i].field, newValue: w.plan.toOpen[i].message, details: { query_id: id } })));
  }
  if (w.plan.toClose.length > 0) {
    await stores.queries.close(w.plan.toClose.map((q) => q.id));
    for (const q of w.plan.toClose) entries.push(auditEntry(actor, study.id, { ...base, action: 'query.closed', fieldCode: q.fieldCode, details: { query_id: q.id, why: 'cause corrected' } }));
  }
  await stores.audit.append(entries);
}
