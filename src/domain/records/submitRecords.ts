import { authorOf, reasonOf, type Actor, type RecordSource } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError, type FieldError } from '../errors.js';
import { isStorableText } from '../storableText.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import { reachable } from '../patients/patientReach.js';
import type {
  AuditEntry, AuditStore, NewWebhookEvent, PatientStore, QueryStore, RecordKey, RecordStore, StoredRecord, Study, StudyStore, WebhookStore,
} from '../stores.js';
import { formHidden } from '../studies/designForKey.js';
import type { EditCheckDef, FormDef, VisitDef } from '../studyDesign/types.js';
import { studyEvent } from '../webhooks/webhookEvents.js';
import { issueCodeOf, planQueries, queryCauses, type OpenQuery, type QueryCause } from './autoQueries.js';
import { failingChecks } from './editChecks.js';
import {
  changedFields, completenessIssues, overwrittenFields, EMPTY_CONTENT, mergeContent, typedValues,
  type ChangedField, type FieldIssue, type NotDoneMark, type RecordContent,
} from './recordContent.js';
import { visitWindowDates, type VisitWindowDates } from './visitDate.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

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
  /** Why a saved value changes: added to the audit row of every value the record writes. */
  reason?: string;
}

/**
 * Every code a per-record result can carry (spec/openapi.yaml, "Sending forms"): the message
 * catalogues hold an English and a Russian text for each (test/unit/recordsMessages.test.ts).
 */
export const RECORD_RESULT_CODES = [
  'saved', 'unchanged', 'validated', 'saved_with_queries', 'saved_as_draft', 'already_filled', 'unknown_subject',
  'team_not_allowed', 'consent_missing', 'form_not_in_visit', 'invalid_instance', 'unknown_field', 'invalid_value', 'edit_check_failed',
  'reason_required',
] as const;

type RecordResultCode = (typeof RECORD_RESULT_CODES)[number];

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

type Stores = { studies: StudyStore; patients: PatientStore; records: RecordStore; queries: QueryStore; audit: AuditStore; webhooks: WebhookStore };

const keyOf = (k: RecordKey) => `${k.patientId}|${k.visitId}|${k.formId}|${k.instance}`;

function refused(index: number, code: RecordResultCode, params: Record<string, unknown> = {}, issues: FieldIssue[] = []): RecordOutcome {
  return { index, status: 'error', code, params, recordId: null, queriesOpened: 0, issues, notFilled: [] };
}

/** Records naming a form or visit the study does not have refuse the whole request, before anything is read or written. */
function unknownDesignErrors(study: Study, inputs: RecordInput[]): FieldError[] {
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
  changes: ChangedField[];
  statusChanged: boolean;
  before: QueryCause[];
  after: QueryCause[];
}

/** Applies the record's content onto the saved version and runs every data-entry rule; nothing is written here. */
function evaluate(
  form: FormDef, checks: EditCheckDef[], window: VisitWindowDates | null, current: RecordState | undefined, input: RecordInput,
): Evaluation | { code: RecordResultCode; issues: FieldIssue[] } {
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
    before: current ? queryCauses(form, checks, saved, window) : [],
    after: queryCauses(form, checks, content, window),
  };
}

/**
 * The one path by which form data is saved, whether it comes from an API key, a FHIR import or the
 * portal: edit checks, the consent gate, automatic queries and the audit trail all run here
 * (interface description, "Records call rules"). Each record gets its own outcome in request order;
 * a bad record is refused alone. Call it inside one transaction run by withTransaction: a record's
 * values, queries and audit rows are written together, with `validateOnly` nothing at all is written,
 * and a form instance inserted concurrently by another writer makes the runner start it again
 * (ConcurrentInsertRetry).
 *
 * Records are evaluated one after the other in memory, each over the version the records before it
 * leave, and the request's writes then go out together (writeChanges).
 */
export async function submitRecords(
  stores: Stores,
  actor: Actor,
  access: WriteAccess,
  study: Study,
  inputs: RecordInput[],
  options: { validateOnly: boolean; source: RecordSource; fillOnly?: boolean },
): Promise<RecordOutcome[]> {
  requireUnlocked(stores.audit, study);
  const unknown = unknownDesignErrors(study, inputs);
  if (unknown.length > 0) {
    const indexes = [...new Set(unknown.map((e) => Number(e.pointer.split('/')[2])))];
    throw new DomainError('unknown_form_or_visit', { indexes }, unknown);
  }
  const design = study.design;
  const forms = new Map(design.forms.map((f) => [f.code, f]));
  const visits = new Map<string, VisitDef>(design.visits.map((v) => [v.code, v]));
  const ids = await stores.studies.designIds(study);
  const patients = new Map((await stores.patients.findBySubjects(study.id, [...new Set(inputs.map((r) => r.subject))])).map((p) => [p.subject, p]));
  const keyFor = (r: RecordInput): RecordKey | undefined => {
    const patient = patients.get(r.subject);
    return patient && { patientId: patient.id, visitId: ids.visits.get(r.visit)!, formId: ids.forms.get(r.form)!, instance: r.instance ?? 1 };
  };
  const keys = inputs.flatMap((r) => keyFor(r) ?? []);
  // Locked up front, in one statement, when the request writes: the records are evaluated over the
  // versions they will be saved over, and no concurrent writer changes them in between.
  const saved = await stores.records.findByKeys(keys, { lock: !options.validateOnly });
  const openQueries = new Map<number, OpenQuery[]>();
  for (const q of await stores.queries.openForRecords(saved.map((r) => r.id))) openQueries.set(q.recordId, [...openQueries.get(q.recordId) ?? [], q]);
  const slots = new Map<string, Slot>(saved.map((r) => [keyOf(r), { key: r, id: r.id, current: r, write: null, open: openQueries.get(r.id) ?? [] }]));

  const outcomes: RecordOutcome[] = [];
  const changes: Change[] = [];
  // Outcomes carry the id of their record, which a record inserted by this request gets only when it is written.
  const slotOfOutcome = new Map<RecordOutcome, Slot>();
  const withIdOf = (slot: Slot, outcome: RecordOutcome) => {
    slotOfOutcome.set(outcome, slot);
    return outcome;
  };
  for (const [index, input] of inputs.entries()) {
    const patient = patients.get(input.subject);
    // A patient at another site, or who withdrew consent to the use of their data, is reported exactly like one that does not exist.
    if (!reachable(patient, access.siteIds)) { outcomes.push(refused(index, 'unknown_subject', { subject: input.subject })); continue; }
    const visit = visits.get(input.visit)!;
    const form = forms.get(input.form)!;
    // Before any check that would tell where the form is planned: a blinded key learns nothing about it.
    if (formHidden(study, form, access.unblinded)) { outcomes.push(refused(index, 'team_not_allowed', { form: form.code })); continue; }
    if (!consentAllowsEntry(study.consentRequired, patient.consent)) { outcomes.push(refused(index, 'consent_missing', { subject: input.subject })); continue; }
    if (!visit.forms.includes(form.code)) { outcomes.push(refused(index, 'form_not_in_visit', { form: form.code, visit: visit.code })); continue; }
    const instance = input.instance ?? 1;
    if (!visit.repeating && instance !== 1) { outcomes.push(refused(index, 'invalid_instance', { visit: visit.code })); continue; }
    const badReason = reasonIssue(input.reason);
    if (badReason) { outcomes.push(refused(index, 'invalid_value', {}, [badReason])); continue; }
    const key = keyFor(input)!;
    let slot = slots.get(keyOf(key));
    if (!slot) slots.set(keyOf(key), slot = { key, id: null, current: undefined, write: null, open: [] });
    if (slot.current && !input.update) { outcomes.push(withIdOf(slot, skipped(index))); continue; }

    const { input: effective, notFilled } = options.fillOnly ? emptyPlacesOnly(slot.current, input) : { input, notFilled: [] as string[] };
    const checks = design.edit_checks.filter((c) => c.form === form.code);
    const window = visitWindowDates(design, visit.code, form.code, patient.enrolledOn);
    const evaluation = evaluate(form, checks, window, slot.current, effective);
    if (!('content' in evaluation)) { outcomes.push(refused(index, evaluation.code, {}, evaluation.issues)); continue; }
    if (slot.current && evaluation.changes.length === 0 && !evaluation.statusChanged) {
      outcomes.push(withIdOf(slot, { index, status: 'ok', code: 'unchanged', params: {}, recordId: null, queriesOpened: 0, issues: [], notFilled }));
      continue;
    }
    const overwritten = slot.current ? overwrittenFields(slot.current, evaluation.content) : [];
    if (design.reason_required_on_update && overwritten.length > 0 && !givenReason(input)) {
      outcomes.push(refused(index, 'reason_required', { fields: overwritten.join(', ') }));
      continue;
    }
    const plan = planQueries(evaluation.before, evaluation.after, slot.open);
    // Later records of the request see this one as saved, with its queries, exactly as if it had been sent alone before them.
    const isNew = !slot.current;
    const opened: OpenQuery[] = plan.toOpen.map((q) => ({ id: 0, fieldCode: q.field, origin: q.origin, checkCode: q.checkCode }));
    slot.open = [...slot.open.filter((q) => !plan.toClose.includes(q)), ...opened];
    slot.current = { status: evaluation.status, ...evaluation.content };
    slot.write ??= isNew ? 'insert' : 'update';
    const code = options.validateOnly ? 'validated' : evaluation.status === 'draft' ? 'saved_as_draft' : 'saved';
    outcomes.push(withIdOf(slot, { ...outcomeOfSave(index, code, evaluation.status, plan.toOpen), notFilled }));
    changes.push({ slot, patient, where: { subject: patient.subject, visit: visit.code, form: form.code, instance }, isNew, evaluation, plan, opened, reason: givenReason(input) });
  }
  if (!options.validateOnly) await writeChanges(stores, actor, study, options.source, slots, changes);
  for (const [outcome, slot] of slotOfOutcome) outcome.recordId = slot.id;
  return outcomes;
}

type RecordState = Pick<StoredRecord, 'status' | 'values' | 'notDone' | 'tables'>;

/** A form instance as the request leaves it, record after record. */
interface Slot {
  key: RecordKey;
  /** Null while the record is not saved (with validate-only, or until the request's insert gives it). */
  id: number | null;
  current: RecordState | undefined;
  /** What the request does to the saved row: insert it, or update it. */
  write: 'insert' | 'update' | null;
  /** Its queries standing open; those this request opens have id 0 until they are inserted. */
  open: OpenQuery[];
}

/** One record of the request that changes its form instance. */
interface Change {
  slot: Slot;
  patient: { id: number; siteId: number };
  /** The form instance by its codes, as events name it. */
  where: { subject: string; visit: string; form: string; instance: number };
  isNew: boolean;
  evaluation: Evaluation;
  plan: ReturnType<typeof planQueries>;
  opened: OpenQuery[];
  /** The reason the record gives for its change, if any. */
  reason: string | undefined;
}

/**
 * Another transaction inserted a form instance this request was about to insert. It carries
 * PostgreSQL's serialization-failure code, so the transaction runner runs the use case again, which
 * then finds the other writer's record saved and treats it exactly as one saved before the request.
 */
export class ConcurrentInsertRetry extends Error {
  readonly code = '40001';
  constructor() {
    super('a form instance was inserted concurrently');
  }
}

/**
 * Writes what the request changed, a few statements for the whole request rather than some per
 * record (a call of 500 records made over 600 round trips): the new records, then the updated
 * ones, the queries opened and closed, the audit trail and the webhook events, in request order.
 */
async function writeChanges(stores: Stores, actor: Actor, study: Study, source: RecordSource, slots: Map<string, Slot>, changes: Change[]): Promise<void> {
  if (changes.length === 0) return;
  const written = [...slots.values()].filter((s) => s.write !== null);
  const sites = new Map(changes.map((c) => [c.slot, c.patient.siteId]));
  const toInsert = written.filter((s) => s.write === 'insert');
  const inserted = await stores.records.insertMany(toInsert.map((s) => ({ ...s.key, studyId: study.id, siteId: sites.get(s)!, source, ...s.current! })));
  if (inserted.length < toInsert.length) throw new ConcurrentInsertRetry();
  const insertedIds = new Map(inserted.map((r) => [keyOf(r), r.id]));
  for (const slot of toInsert) slot.id = insertedIds.get(keyOf(slot.key))!;
  await stores.records.updateMany(written.filter((s) => s.write === 'update').map((s) => ({ id: s.id!, ...s.current! })));

  const newQueries = changes.flatMap((c) => c.plan.toOpen.map((q) => ({
    studyId: study.id, recordId: c.slot.id!, patientId: c.patient.id, siteId: c.patient.siteId, fieldCode: q.field, origin: q.origin,
    checkCode: q.checkCode, message: q.message, openedBy: authorOf(actor),
  })));
  const queryIds = await stores.queries.insert(newQueries);
  changes.flatMap((c) => c.opened).forEach((q, i) => {
    // The store returns one id per query given, in their order: a missing one is a bug, not a query without id.
    const id = queryIds[i];
    if (id === undefined) throw new Error(`the query store returned no id for query ${i}`);
    q.id = id;
  });
  await stores.queries.close(changes.flatMap((c) => c.plan.toClose.map((q) => q.id)), { type: 'system', by: authorOf(actor), reason: CAUSE_CORRECTED });
  await stores.audit.append(changes.flatMap((c) => trailOf(actor, study, c)));
  const siteNumbers = new Map((await stores.studies.sites(study)).map((site) => [site.id, site.number]));
  await stores.webhooks.publish(changes.flatMap((c) => eventsOf(study, siteNumbers.get(c.patient.siteId)!, c)));
}

/** The record's event (`fields` are codes only, never values), then those of the queries it opened and closed. */
function eventsOf(study: Study, site: string, c: Change): NewWebhookEvent[] {
  const where = { ...c.where, site };
  return [
    studyEvent(study, c.isNew ? 'record.saved' : 'record.changed', { ...where, fields: c.evaluation.changes.map((change) => change.field) }),
    ...c.opened.map((q) => studyEvent(study, 'query.opened', { ...where, fields: [q.fieldCode], query_id: q.id })),
    ...c.plan.toClose.map((q) => studyEvent(study, 'query.closed', { ...where, fields: [q.fieldCode], query_id: q.id })),
  ];
}

/** Why the service closes an automatic query: the reason the queries read shows (its trail row says `cause corrected`). */
const CAUSE_CORRECTED = 'The value that caused the query was corrected.';

/**
 * Keeps only what fills an empty place of the saved record (a FHIR import in save mode never changes
 * a saved value); it is applied to the row-locked record, so a value someone saved meanwhile is kept.
 */
function emptyPlacesOnly(current: RecordState | undefined, input: RecordInput): { input: RecordInput; notFilled: string[] } {
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

/** The longest reason for change (spec, RecordInput.reason): the API's schema holds it, and a crafted portal form meets it here. */
const MAX_REASON = 500;

/** What is wrong with a reason the audit trail, its only home, could not keep as sent. */
function reasonIssue(reason: string | undefined): FieldIssue | null {
  if (reason === undefined) return null;
  if (!isStorableText(reason)) return { field: 'reason', code: 'invalid_character' };
  return reason.length > MAX_REASON ? { field: 'reason', code: 'too_long', params: { max: MAX_REASON } } : null;
}

/** The record's reason for change; blank counts as none, so a study requiring one gets a real answer. */
function givenReason(input: RecordInput): string | undefined {
  return input.reason?.trim() || undefined;
}

function skipped(index: number): RecordOutcome {
  return { index, status: 'skip', code: 'already_filled', params: {}, recordId: null, queriesOpened: 0, issues: [], notFilled: [] };
}

/** The outcome of a saved (or, with validate-only, savable) record: `warn` when it opened queries or is a draft. */
function outcomeOfSave(index: number, code: 'saved' | 'saved_as_draft' | 'validated', status: 'complete' | 'draft', opened: QueryCause[]): RecordOutcome {
  const warn = opened.length > 0 || status === 'draft';
  const finalCode = code === 'validated' ? code : opened.length > 0 ? 'saved_with_queries' : code;
  return {
    index,
    status: warn ? 'warn' : 'ok',
    code: finalCode,
    params: { queries: opened.length, draft: status === 'draft' },
    recordId: null,
    queriesOpened: opened.length,
    issues: opened.map((q) => ({ field: q.field, code: issueCodeOf(q), params: q.params })),
    notFilled: [],
  };
}

/**
 * Audit rows for each saved or changed value, the status change, and the queries opened and closed. The
 * record's reason is added to the way the data came (reasonOf), which the trail always states.
 */
function trailOf(actor: Actor, study: Study, c: Change): AuditEntry[] {
  const base = { patientId: c.patient.id, recordId: c.slot.id!, reason: reasonOf(actor, c.reason) };
  const entries: AuditEntry[] = c.evaluation.changes.map((change) =>
    auditEntry(actor, study.id, {
      ...base, action: c.isNew ? 'record.value_set' : 'record.value_changed', fieldCode: change.field, oldValue: change.oldValue, newValue: change.newValue, details: change.valueKinds,
    }),
  );
  if (c.evaluation.statusChanged) entries.push(auditEntry(actor, study.id, { ...base, action: 'record.status_changed', newValue: c.evaluation.status }));
  c.opened.forEach((q, i) => entries.push(auditEntry(actor, study.id, { ...base, action: 'query.opened', fieldCode: q.fieldCode, newValue: c.plan.toOpen[i]?.message, details: { query_id: q.id } })));
  for (const q of c.plan.toClose) entries.push(auditEntry(actor, study.id, { ...base, action: 'query.closed', fieldCode: q.fieldCode, details: { query_id: q.id, why: 'cause corrected' } }));
  return entries;
}
