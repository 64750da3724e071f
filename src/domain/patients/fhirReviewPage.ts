import { DomainError } from '../errors.js';
import type { FhirImportItem } from '../fhir/fhirImportItem.js';
import { itemPlacements, type ItemPlacement } from '../fhir/itemPlacement.js';
import { currentRecords, markedTables, outdatedPositions, rowKeyOf, savedAt, tableKeyOf } from '../fhir/itemRecords.js';
import { requirePatient, unblindedFor, type StaffAccess } from '../people/staffAccess.js';
import type { FhirImportStore, PatientStore, RecordStore, StudyStore } from '../stores.js';
import { formHidden, hiddenFormIds } from '../studies/designForKey.js';
import type { FhirImportSummary, PatientCardStore } from './patientCard.js';

/** One item of an import as the review page shows it, with the names of its place. */
interface ReviewItem extends Omit<FhirImportItem, 'placement'> {
  /** The item's index in the import: the key of a choice when confirming. */
  position: number;
  fieldLabel: string | null;
  /** What the place holds now; it may differ from `saved_value`, shown when the import was made. */
  current: string | null;
  /** A pending item whose place changed after the import was made: confirming it would be refused. */
  changedSince: boolean;
  /**
   * Whether the item carries the "save" tick: every `new` plain value, and of a table row only its
   * first `new` cell, since a row is taken or left as one.
   */
  rowLead: boolean;
  /**
   * A conflict with the not-done mark of a table (the file's rows for a table the site had marked) other
   * than the table's first: the table's first carries the one keep-or-replace choice for them all.
   */
  withTable: boolean;
  /** Why the value is at this visit (the FHIR call's `placement`); null without a visit or a date. */
  placement: ItemPlacement | null;
}

interface ReviewGroup { visit: string; visitName: string; instance: number; form: string; formName: string; items: ReviewItem[] }

export interface ImportReview {
  summary: FhirImportSummary;
  subject: string;
  /** Items with a place in the eCRF, grouped by visit occurrence and form in the order of the design. */
  groups: ReviewGroup[];
  /** Items the mapping found no place for (skipped). */
  unplaced: ReviewItem[];
  /** Items on forms the person may not see (unblinded team), left off the page. */
  hiddenItems: number;
}

/**
 * The review page of a patient's FHIR import (issue 7, point 4), for the site team of the patient's
 * site and managers. Reads only; the decision itself is `confirmImport` / `rejectImport`. Items on
 * forms hidden from a person blinded at the patient's site (`unblindedFor`) are left off the page and so
 * cannot be chosen.
 */
export async function importReview(
  stores: { studies: StudyStore; patients: PatientStore; records: RecordStore; fhirImports: FhirImportStore; portalReads: PatientCardStore },
  access: StaffAccess,
  subject: string,
  number: number,
): Promise<ImportReview> {
  const study = access.study;
  const patient = await requirePatient(stores.patients, access, subject);
  const found = Number.isInteger(number) && number > 0 ? await stores.fhirImports.findForDecision(patient.id, number) : undefined;
  const ids = await stores.studies.designIds(study);
  const unblinded = unblindedFor(access, patient.siteId);
  const summary = found && (await stores.portalReads.fhirImports(patient.id, hiddenFormIds(study, ids, unblinded))).find((i) => i.number === found.number);
  if (!found || !summary) throw new DomainError('import_not_found', { subject: patient.subject, number });
  const current = currentRecords(await stores.records.forPatient(patient.id), ids.visits, ids.forms);
  const design = study.design;
  const forms = new Map(design.forms.map((f) => [f.code, f]));
  const visits = new Map(design.visits.map((v) => [v.code, v]));

  const labelOf = (item: FhirImportItem): string | null => {
    const form = item.form ? forms.get(item.form) : undefined;
    if (!form || !item.field) return null;
    const [code, column] = item.field.split('.');
    const field = form.fields.find((f) => f.code === code);
    if (!field) return null;
    const col = column && field.type === 'table' ? field.columns.find((c) => c.code === column) : undefined;
    return col ? `${field.label} — ${col.label}` : field.label;
  };

  const placements = itemPlacements(found.items, design, patient.enrolledOn);
  const groups = new Map<string, ReviewGroup>();
  const unplaced: ReviewItem[] = [];
  const ledRows = new Set<string>();
  const marked = markedTables(found.items);
  const pending = (item: FhirImportItem) => item.state === 'new' || item.state === 'conflict';
  // What the confirmation would refuse as changed since the import was made, by the same rule (outdatedPositions).
  const outdated = new Set(outdatedPositions(found.items, new Set(found.items.flatMap((item, position) => (pending(item) ? [position] : []))), current));
  const ledMarks = new Set<string>();
  let hiddenItems = 0;
  found.items.forEach((item, position) => {
    const form = item.form ? forms.get(item.form) : undefined;
    if (form && formHidden(study, form, unblinded)) { hiddenItems++; return; }
    const now = item.visit && item.form && item.field ? savedAt(current(item.visit, item.instance ?? 1, item.form), item.field, item.row) : null;
    const rowKey = rowKeyOf(item);
    const rowLead = item.state === 'new' && (item.row === null || !ledRows.has(rowKey));
    if (rowLead && item.row !== null) ledRows.add(rowKey);
    const againstMark = item.row !== null && marked.has(tableKeyOf(item));
    const withTable = item.state === 'conflict' && againstMark && ledMarks.has(tableKeyOf(item));
    if (item.state === 'conflict' && againstMark) ledMarks.add(tableKeyOf(item));
    const view: ReviewItem = {
      ...item, position, fieldLabel: labelOf(item), current: now, changedSince: outdated.has(position),
      rowLead, withTable, placement: placements[position] ?? null,
    };
    const visit = item.visit ? visits.get(item.visit) : undefined;
    if (!visit || !form) { unplaced.push(view); return; }
    const key = `${visit.code}|${item.instance ?? 1}|${form.code}`;
    if (!groups.has(key)) groups.set(key, { visit: visit.code, visitName: visit.name, instance: item.instance ?? 1, form: form.code, formName: form.name, items: [] });
    groups.get(key)!.items.push(view);
  });
  const visitOrder = design.visits.map((v) => v.code);
  const formOrder = design.forms.map((f) => f.code);
  const ordered = [...groups.values()].sort((a, b) =>
    visitOrder.indexOf(a.visit) - visitOrder.indexOf(b.visit) || a.instance - b.instance || formOrder.indexOf(a.form) - formOrder.indexOf(b.form));
  return { summary, subject: patient.subject, groups: ordered, unplaced, hiddenItems };
}

