/**
 * The site team's decision on a FHIR import that waits, `proposed`, on the patient's card (spec,
 * `importFhirRecord`: "waits on the patient's card until the site team confirms or rejects it").
 *
 * Decisions, where the interface description is silent:
 * - Who: a person holding a site-staff or manager role of the study whose sites include the patient's
 *   site (a manager limited to some sites decides only for those). Anyone else is refused with
 *   `import_decision_not_allowed`, also when the patient does not exist, so nobody learns of patients
 *   outside their sites.
 * - What: only a `proposed` import is decided, once. A `saved` import (save mode left nothing to review)
 *   and a decided one are refused with `import_already_decided`. Both decisions are final.
 * - Confirming saves the chosen items through `submitRecords`, the one write path (edit checks, consent
 *   gate, automatic queries, audit), as the confirming person in the portal, with record source `fhir`.
 *   `choices` maps an item's position (its index in the import's items) to `fill` (a `new` item fills
 *   its empty place), `replace` (a `conflict` item replaces the saved value: an audited change with old
 *   and new value), `keep` (a `conflict` item leaves the saved value) or `candidate:<n>` (a tie takes its
 *   n-th candidate's value, 0-based; it replaces a saved value, since picking is the explicit choice).
 *   `reason` is the person's reason for change: it goes with the records to the write path, so every
 *   replaced value's audit row carries it; in a study with `reason_required_on_update`, replacing a saved
 *   value without one refuses the confirmation with `import_reason_required`.
 *   Items left out are not saved. Without `choices`, every `new` item fills its place and every conflict
 *   keeps the saved value, so a saved value is replaced only by an explicit choice, and ties wait.
 * - A table row is taken as one: filling one `new` cell of a row fills every `new` cell of that row, so
 *   a condition never arrives as a code without its term. A conflicting cell still needs its own
 *   `replace`, except in a table the site had marked not done (`NA`) when the file came: its rows are
 *   conflicts with that mark, and `replace` on any of them replaces the mark with all of them, through
 *   the records path, which takes the mark away when rows are sent (an audited change, needing a reason
 *   where the study requires one, like any saved value replaced).
 * - Nothing is saved unless everything chosen is: a place that changed since the import was made (a `new`
 *   place now filled, a table now marked not done, a saved value that differs from the one shown) refuses the confirmation with
 *   `import_outdated`, and a record the write path refuses (an edit check, a form the person may not see)
 *   with `import_items_refused`; either way the import stays `proposed`. The check and the write see one
 *   version of each chosen record (row locks; a form instance another writer saves in between makes the
 *   confirmation start again). A locked study and a patient
 *   without valid consent refuse a confirmation; a rejection saves no study data and is always possible.
 * - Blinding: a person who is not unblinded at the patient's site (no role of theirs covering that site is
 *   unblinded, `unblindedFor`; an unblinded role at another site does not count) is not shown the items on
 *   forms of the unblinded team, so may not end an import while any of them still waits (a `new` item, a
 *   conflict or a tie): either decision is final, and would leave those values untaken by nobody who saw
 *   them. It is refused with `import_needs_unblinded_team`, and a member of the unblinded team decides the
 *   import.
 * - Afterwards the saved items are `saved` and the others keep their state (`new`, `conflict`), which in
 *   a confirmed import means "not taken". A picked tie is stored with the value it saved and `picked`, the
 *   resource of its candidate, so the import says what was saved and from which observation; the counts are recounted from the states. The import records
 *   `decided_at` and `decided_by`, and the decision is audited with the positions saved, kept and left out.
 *   Each item saved or kept says so in its `outcome`, and a rejection keeps the person's reason, for the
 *   read calls (`getFhirImport`), which derive every other item's outcome from its state.
 * - The first confirmed import that carries hospital identifiers links them to the patient
 *   (`fhir_identity`); every later file must carry one of them (`checkPatientIdentity`). Confirming an
 *   import whose identifiers share none with an identity linked meanwhile is refused with
 *   `fhir_identity_mismatch`.
 */
import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError, type FieldError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import { staffAccessOf, unblindedFor } from '../people/staffAccess.js';
import { ConcurrentInsertRetry, submitRecords, type RecordOutcome, type WriteAccess } from '../records/submitRecords.js';
import type {
  AuditStore, FhirImportStore, ItemChange, Patient, PatientStore, PeopleStore, QueryStore, RecordStore, StoredFhirImport, Study, StudyStore,
  User, WebhookStore,
} from '../stores.js';
import { hiddenFormCodes } from '../studies/designForKey.js';
import { requireStudy } from '../studies/requireStudy.js';
import { studyEvent } from '../webhooks/webhookEvents.js';
import { tableOf } from './cellField.js';
import { itemAt } from './itemAt.js';
import { countItems, waitsForDecision, type FhirImportCounts, type FhirImportItem } from './fhirImportItem.js';
import { importIdOf } from './importId.js';
import { itemRecords, markedTables, outdatedPositions, rowKeyOf, tableKeyOf, type CurrentRecord } from './itemRecords.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

type Stores = {
  studies: StudyStore; people: PeopleStore; patients: PatientStore; records: RecordStore; queries: QueryStore; audit: AuditStore; fhirImports: FhirImportStore;
  webhooks: WebhookStore;
};

/** The person deciding, signed in to the portal. */
export type Person = Pick<User, 'id' | 'name'>;

/** Which import: the patient's import number, as in its `review_url`. */
export interface ImportRef {
  study: string;
  subject: string;
  number: number;
}

/** What to do with one item: see the module comment. */
export type ItemChoice = 'fill' | 'replace' | 'keep' | `candidate:${number}`;

export interface DecisionResult {
  number: number;
  status: 'confirmed' | 'rejected';
  counts: FhirImportCounts;
  /** Positions of the items saved by the confirmation. */
  saved: number[];
  /** Positions of the conflicts whose saved value was kept (by choice or by default). */
  kept: number[];
  /** Whether this confirmation linked the file's identifiers to the patient. */
  identityLinked: boolean;
  /** The write path's result per record saved. */
  outcomes: RecordOutcome[];
}

/**
 * The import, the patient and what the person may write for that patient (the patient's site, and the
 * unblinded team's forms when the person is unblinded there, see `unblindedFor`), or a refusal.
 */
async function openDecision(stores: Stores, person: Person, ref: ImportRef) {
  const study = await requireStudy(stores.studies, ref.study);
  const [patient] = await stores.patients.findBySubjects(study.id, [ref.subject]);
  const access = staffAccessOf(study, person.id, await stores.people.roles(study.id, person.id));
  if (!patient || !access.siteIds.includes(patient.siteId)) throw new DomainError('import_decision_not_allowed', { subject: ref.subject, study: study.code });
  const found = await stores.fhirImports.findForDecision(patient.id, ref.number);
  if (!found) throw new DomainError('import_not_found', { subject: patient.subject, number: ref.number });
  if (found.status !== 'proposed') throw new DomainError('import_already_decided', { subject: patient.subject, number: found.number, status: found.status });
  const writeAccess: WriteAccess = { siteIds: [patient.siteId], unblinded: unblindedFor(access, patient.siteId) };
  const unseen = writeAccess.unblinded ? 0 : waitingOnHiddenForms(study, found.items);
  if (unseen > 0) throw new DomainError('import_needs_unblinded_team', { subject: patient.subject, number: found.number, count: unseen });
  return { study, patient, writeAccess, found };
}

/** How many items still wait for a decision on forms hidden from a person who is not unblinded. */
function waitingOnHiddenForms(study: Study, items: readonly FhirImportItem[]): number {
  const hidden = hiddenFormCodes(study, false);
  return items.filter((item) => item.form !== null && hidden.has(item.form) && waitsForDecision(item)).length;
}

/** Tells the study's subscribers that the import was decided; they read the outcome with `getFhirImport`. */
async function publishDecision(stores: Stores, study: Study, patient: Pick<Patient, 'subject' | 'siteId'>, number: number): Promise<void> {
  const site = (await stores.studies.sites(study)).find((s) => s.id === patient.siteId)!;
  await stores.webhooks.publish([studyEvent(study, 'fhir_import.decided', { subject: patient.subject, site: site.number, import_id: importIdOf(study.code, patient.subject, number) })]);
}

/**
 * Confirms a proposed import: saves the chosen items and links the patient's FHIR identity on the first
 * confirmation. Call it inside one transaction: on any refusal nothing is kept.
 *
 * @param input.choices - item position → choice; left out: fill every `new` item, keep every conflict
 * @throws DomainError `import_decision_not_allowed`, `import_not_found`, `import_already_decided`,
 *   `import_needs_unblinded_team`, `invalid_import_choice`, `study_locked`, `consent_missing`, `fhir_identity_mismatch`, `import_outdated`,
 *   `import_reason_required`, `import_items_refused`
 */
export async function confirmImport(
  stores: Stores,
  person: Person,
  input: ImportRef & { choices?: Readonly<Record<number, ItemChoice>>; reason?: string },
): Promise<DecisionResult> {
  const { study, patient, writeAccess, found } = await openDecision(stores, person, input);
  requireUnlocked(stores.audit, study);
  if (!consentAllowsEntry(study.consentRequired, patient.consent)) throw new DomainError('consent_missing', { subject: patient.subject });
  const identity = identityToLink(patient, found);
  const choices = resolveChoices(found.items, input.choices);
  const toSave = new Set([...choices].flatMap(([position, choice]) => (choice === 'keep' ? [] : [position])));
  // A tie is saved with the value of the candidate picked for it.
  const picked = new Map([...choices].flatMap(([position, choice]) => {
    const index = candidateIndex(choice);
    const candidate = index === null ? undefined : itemAt(found.items, position).candidates[index];
    return candidate === undefined ? [] : [[position, candidate] as const];
  }));
  const chosenItems = found.items.map((item, position) => {
    const candidate = picked.get(position);
    return candidate ? { ...item, value: candidate.value } : item;
  });

  const ids = await stores.studies.designIds(study);
  const locked = await lockRecords(stores, patient, chosenItems, toSave, ids);
  const outdated = outdatedPositions(chosenItems, toSave, locked);
  if (outdated.length > 0) throw new DomainError('import_outdated', { subject: patient.subject, number: found.number, positions: outdated });

  // Each value's audit event says it came from this import (issue 24.5): the record's `source` is that of
  // its first save, so the trail is where a reader tells FHIR values from typed ones.
  const actor: Actor = { kind: 'user', userId: person.id, name: person.name, via: 'fhir_review', importNumber: found.number };
  const records = itemRecords(patient.subject, chosenItems, toSave, locked);
  // A form instance that was not saved when checked goes as a first entry, since nothing locked it: saved
  // meanwhile by another writer, it comes back `already_filled`, and the confirmation starts again, to be
  // checked against that record rather than write over it unchecked.
  const sent = records.map((r) => ({ ...r.input, update: locked(r.input.visit, r.input.instance ?? 1, r.input.form) !== undefined, reason: input.reason }));
  const outcomes = await submitRecords(stores, actor, writeAccess, study, sent, { validateOnly: false, source: 'fhir' });
  if (outcomes.some((o) => o.code === 'already_filled')) throw new ConcurrentInsertRetry();
  const unexplained = outcomes.filter((o) => o.code === 'reason_required');
  if (unexplained.length > 0) {
    throw new DomainError('import_reason_required', { subject: patient.subject, number: found.number, fields: unexplained.map((o) => o.params.fields).join(', ') });
  }
  const refused = refusedItems(outcomes, records, chosenItems);
  if (refused.length > 0) throw new DomainError('import_items_refused', { subject: patient.subject, number: found.number, count: refused.length }, refused);

  const items = found.items.map((item) => ({ ...item }));
  const changes: ItemChange[] = records.flatMap((r) => r.positions.map((position) => {
    const candidate = picked.get(position);
    return {
      position, state: 'saved' as const, row: r.rows.get(position) ?? itemAt(items, position).row, outcome: 'confirmed' as const,
      ...(candidate ? { picked: { resource: candidate.resource, value: candidate.value } } : {}),
    };
  }));
  for (const { position, state, row, picked: pick } of changes) {
    Object.assign(itemAt(items, position), { state, row }, pick ? { value: pick.value, reason: null, picked: pick.resource } : {});
  }
  const kept = found.items.flatMap((item, position) => (item.state === 'conflict' && choices.get(position) === 'keep' ? [position] : []));
  // A kept conflict stays `conflict` like one left out; its outcome tells the read calls which it was.
  const keptChanges = kept.map((position): ItemChange => ({ position, state: 'conflict', row: itemAt(items, position).row, outcome: 'kept_saved_value' }));
  await stores.fhirImports.updateItems(found.id, [...changes, ...keptChanges]);
  const counts = countItems(items);
  await stores.fhirImports.decide(found.id, { status: 'confirmed', decidedBy: person.id, counts });
  await publishDecision(stores, study, patient, found.number);
  const identityLinked = identity.length > 0 && (await stores.fhirImports.linkPatientIdentity(patient.id, identity));

  const saved = changes.map((c) => c.position).sort((a, b) => a - b);
  const leftOut = found.items.flatMap((item, position) => (waitsForDecision(item) && !choices.has(position) ? [position] : []));
  const ties = Object.fromEntries([...picked].map(([position, candidate]) => [position, candidate.resource]));
  await stores.audit.append([
    auditEntry(actor, study.id, {
      action: 'fhir.import_confirmed',
      patientId: patient.id,
      reason: `FHIR import ${found.number} confirmed on the patient's card`,
      details: { import_id: found.id, number: found.number, saved, kept, left_out: leftOut, ties_picked: ties, counts },
    }),
    ...(identityLinked
      ? [auditEntry(actor, study.id, {
        action: 'patient.fhir_identity_linked',
        patientId: patient.id,
        newValue: JSON.stringify(identity),
        reason: `Linked by the confirmation of FHIR import ${found.number}`,
        details: { import_id: found.id, number: found.number },
      })]
      : []),
  ]);
  return { number: found.number, status: 'confirmed', counts, saved, kept, identityLinked, outcomes };
}

/**
 * Rejects a proposed import: nothing of it is saved, and it stays on the card as rejected. Audited, with
 * the person's reason when given.
 *
 * @throws DomainError `import_decision_not_allowed`, `import_not_found`, `import_already_decided`,
 *   `import_needs_unblinded_team`
 */
export async function rejectImport(stores: Stores, person: Person, input: ImportRef & { reason?: string }): Promise<DecisionResult> {
  const { study, patient, found } = await openDecision(stores, person, input);
  const why = input.reason?.trim();
  await stores.fhirImports.decide(found.id, { status: 'rejected', decidedBy: person.id, counts: found.counts, reason: why || null });
  await publishDecision(stores, study, patient, found.number);
  const actor: Actor = { kind: 'user', userId: person.id, name: person.name, via: 'portal' };
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'fhir.import_rejected',
    patientId: patient.id,
    reason: why ? `FHIR import ${found.number} rejected on the patient's card: ${why}` : `FHIR import ${found.number} rejected on the patient's card`,
    details: { import_id: found.id, number: found.number, counts: found.counts },
  })]);
  return { number: found.number, status: 'rejected', counts: found.counts, saved: [], kept: [], identityLinked: false, outcomes: [] };
}

/** The identifiers to link on confirmation: none when the patient has some; refused when they contradict them. */
function identityToLink(patient: Patient, found: StoredFhirImport): { system?: string; value: string }[] {
  const carried = found.fhirIdentity ?? [];
  const linked = patient.fhirIdentity ?? [];
  if (linked.length === 0) return carried;
  const matches = carried.some((c) => linked.some((l) => l.value === c.value && (!l.system || l.system === c.system)));
  if (carried.length > 0 && !matches) {
    throw new DomainError('fhir_identity_mismatch', {
      subject: patient.subject,
      reason: `import ${found.number} carries none of the identifiers linked to the patient since it was made`,
    });
  }
  return [];
}

/** The candidate a `candidate:<n>` choice picks, or null for the other choices. */
function candidateIndex(choice: ItemChoice): number | null {
  const match = /^candidate:(\d+)$/.exec(choice);
  return match ? Number(match[1]) : null;
}

/**
 * Each item's choice; checks that the choice fits the item's state, and takes table rows whole. The file's
 * rows for a table marked not done are taken all together: replacing the mark with any of them replaces
 * it with every one (a `keep` on another of them would keep a mark that is gone).
 */
function resolveChoices(items: readonly FhirImportItem[], choices: Readonly<Record<number, ItemChoice>> | undefined): Map<number, ItemChoice> {
  if (choices === undefined) {
    return new Map(items.flatMap((item, position): [number, ItemChoice][] =>
      item.state === 'new' ? [[position, 'fill']] : item.state === 'conflict' ? [[position, 'keep']] : []));
  }
  const resolved = new Map<number, ItemChoice>();
  for (const [key, choice] of Object.entries(choices)) {
    const position = Number(key);
    const item = items[position];
    const state = item?.state ?? null;
    const index = candidateIndex(choice);
    const fits = (choice === 'fill' && state === 'new') || ((choice === 'replace' || choice === 'keep') && state === 'conflict') ||
      (index !== null && item?.tie === true && index < item.candidates.length);
    if (!Number.isInteger(position) || !fits) throw new DomainError('invalid_import_choice', { position: key, choice, state });
    resolved.set(position, choice);
  }
  const filledRows = new Set([...resolved].flatMap(([position, choice]) => (choice === 'fill' && itemAt(items, position).row !== null ? [rowKeyOf(itemAt(items, position))] : [])));
  const marked = markedTables(items);
  const replacedMarks = new Set([...resolved].flatMap(([position, choice]) => {
    const item = itemAt(items, position);
    return choice === 'replace' && marked.has(tableKeyOf(item)) ? [tableKeyOf(item)] : [];
  }));
  items.forEach((item, position) => {
    if (item.state === 'new' && item.row !== null && filledRows.has(rowKeyOf(item))) resolved.set(position, 'fill');
    if (item.state === 'conflict' && item.row !== null && replacedMarks.has(tableKeyOf(item))) resolved.set(position, 'replace');
  });
  return resolved;
}

/**
 * Row-locks the saved records the chosen items go into (to the end of the transaction), so the check
 * against what the person saw and the write see the same content; the other records as they are.
 * One statement, locking in id order as the records path does, so a confirmation and a records call
 * writing the same forms queue rather than deadlock.
 */
async function lockRecords(
  stores: Stores,
  patient: Patient,
  items: readonly FhirImportItem[],
  chosen: ReadonlySet<number>,
  ids: { visits: Map<string, number>; forms: Map<string, number> },
): Promise<CurrentRecord> {
  const keys = [...chosen].flatMap((position) => {
    const { visit, form, instance } = itemAt(items, position);
    const visitId = visit ? ids.visits.get(visit) : undefined;
    const formId = form ? ids.forms.get(form) : undefined;
    return visitId === undefined || formId === undefined ? [] : [{ patientId: patient.id, visitId, formId, instance: instance ?? 1 }];
  });
  const locked = await stores.records.findByKeys(keys, { lock: true });
  const visitCodes = new Map([...ids.visits].map(([code, id]) => [id, code]));
  const formCodes = new Map([...ids.forms].map(([code, id]) => [id, code]));
  const byPlace = new Map(locked.map((r) => [`${visitCodes.get(r.visitId)}|${r.instance}|${formCodes.get(r.formId)}`, r]));
  return (visit, instance, form) => byPlace.get(`${visit}|${instance}|${form}`);
}

/** One field error per refused record's issue, pointing at the chosen item it concerns. */
function refusedItems(outcomes: RecordOutcome[], records: ReturnType<typeof itemRecords>, items: readonly FhirImportItem[]): FieldError[] {
  return outcomes.flatMap((outcome, i): FieldError[] => {
    if (outcome.status !== 'error' && outcome.status !== 'skip') return [];
    const record = records[i];
    if (!record) throw new Error('an outcome without its record'); // submitRecords answers each record, in order
    const { positions } = record;
    const pointerFor = (field: string | undefined) => {
      const position = positions.find((p) => field !== undefined && (itemAt(items, p).field === field || tableOf(itemAt(items, p).field!) === field)) ?? positions[0];
      return `/items/${position}`;
    };
    if (outcome.issues.length === 0) return [{ pointer: pointerFor(undefined), code: outcome.code, params: outcome.params }];
    return outcome.issues.map((issue) => ({ pointer: pointerFor(issue.field), code: issue.code, params: { ...issue.params, record: outcome.code } }));
  });
}
