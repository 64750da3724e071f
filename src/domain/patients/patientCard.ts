import type { Consent, Patient, PatientStore, RecordStore, Site, StoredRecord, StudyStore } from '../stores.js';
import { formHidden, hiddenFormIds } from '../studies/designForKey.js';
import type { FieldDef, FormDef } from '../studyDesign/types.js';
import { requirePatient, unblindedFor, type StaffAccess } from '../people/staffAccess.js';
import { displayUnit } from '../studyDesign/displayUnit.js';
import { auditValueView, type AuditValueView } from './auditValues.js';
import { auditValueKind } from '../records/notDoneText.js';

/** The newest audit entries shown on a card; the rest stays in the database and the exports. */
const CARD_AUDIT_LIMIT = 500;

/** A query not yet closed: `open`, or `answered` and waiting for its opener; with its thread of answers, oldest first. */
interface PatientQueryView {
  id: number; visit: string; instance: number; form: string; field: string; status: string; origin: string; message: string; openedBy: string; openedAt: Date;
  answers: { author: string; text: string; answeredAt: Date }[];
}
interface PatientAuditView {
  id: number; at: Date; author: string; reason: string; action: string; visit: string | null; instance: number | null; form: string | null;
  field: string | null; oldValue: string | null; newValue: string | null; details: Record<string, unknown>;
}
export interface FhirImportSummary {
  number: number; createdAt: Date; mode: string; status: string; counts: Record<string, number>; keyName: string | null;
  decidedAt: Date | null; decidedBy: string | null;
}

/** What the patient card reads besides records: all filtered to forms the person may see. */
export interface PatientCardStore {
  openQueries(patientId: number, hiddenFormIds: number[]): Promise<PatientQueryView[]>;
  /** Newest first; entries about records of hidden forms are left out. */
  auditTrail(patientId: number, hiddenFormIds: number[], limit: number): Promise<PatientAuditView[]>;
  /** Newest first; the counts leave out the items on the hidden forms. */
  fhirImports(patientId: number, hiddenFormIds: number[]): Promise<FhirImportSummary[]>;
}

interface FieldView {
  code: string;
  label: string;
  /** The unit as people write it (mmHg, 10³/µL); the design keeps the UCUM code. */
  unit: string | null;
  /** The UCUM code of the unit, as the design, the API and the database keep it. */
  ucum: string | null;
  /** The saved value as stored, a choice shown with its label; null when empty. */
  text: string | null;
  /** ND, UNK or NA when the field is marked not done. */
  notDone: string | null;
  /** For a table field: its columns and rows. */
  table: { columns: { code: string; label: string }[]; rows: Record<string, string>[] } | null;
}
interface FormView { code: string; name: string; status: 'complete' | 'draft' | null; fields: FieldView[] }
interface VisitView { code: string; name: string; instance: number; repeating: boolean; forms: FormView[] }

/** An audit entry with its old and new values as the card shows them. */
interface AuditEntryView extends PatientAuditView {
  oldView: AuditValueView | null;
  newView: AuditValueView | null;
}

export interface PatientCard {
  patient: Patient;
  site: Site;
  consent: Consent | undefined;
  visits: VisitView[];
  queries: PatientQueryView[];
  audit: AuditEntryView[];
  auditLimited: boolean;
  imports: FhirImportSummary[];
}

function textOf(field: FieldDef, value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (field.type === 'choice') return `${value} — ${field.options.find((o) => o.code === value)?.label ?? '?'}`;
  if (field.type === 'multichoice') {
    return value.split(',').map((code) => `${code} — ${field.options.find((o) => o.code === code)?.label ?? '?'}`).join('; ');
  }
  return value;
}

function formView(form: FormDef, record: StoredRecord | undefined): FormView {
  return {
    code: form.code,
    name: form.name,
    status: record?.status ?? null,
    fields: form.fields.map((field) => ({
      code: field.code,
      label: field.label,
      unit: 'unit' in field && field.unit ? displayUnit(field.unit) : null,
      ucum: 'unit' in field ? field.unit ?? null : null,
      text: field.type === 'table' ? null : textOf(field, record?.values[field.code]),
      notDone: record?.notDone[field.code] ?? null,
      table: field.type === 'table'
        ? { columns: field.columns.map((c) => ({ code: c.code, label: c.label })), rows: record?.tables[field.code] ?? [] }
        : null,
    })),
  };
}

/**
 * A patient's card for site staff of the patient's site and managers (issue 7): the forms of each
 * visit with their values, open queries, the audit trail and the FHIR imports. Forms of the
 * unblinded team are left out for a person blinded at the patient's site (`unblindedFor`), and so are
 * their queries and audit entries.
 */
export async function patientCard(
  stores: { studies: StudyStore; patients: PatientStore; records: RecordStore; portalReads: PatientCardStore },
  access: StaffAccess,
  subject: string,
): Promise<PatientCard> {
  const study = access.study;
  const patient = await requirePatient(stores.patients, access, subject);
  const [sites, ids, records, consent] = await Promise.all([
    stores.studies.sites(study), stores.studies.designIds(study), stores.records.forPatient(patient.id), stores.patients.latestConsent(patient.id),
  ]);
  const unblinded = unblindedFor(access, patient.siteId);
  const visible = study.design.forms.filter((f) => !formHidden(study, f, unblinded));
  const hidden = hiddenFormIds(study, ids, unblinded);
  const byPlace = new Map(records.map((r) => [`${r.visitId}|${r.instance}|${r.formId}`, r]));
  const visits: VisitView[] = study.design.visits.flatMap((visit) => {
    const visitId = ids.visits.get(visit.code)!;
    const instances = [...new Set([1, ...records.filter((r) => r.visitId === visitId).map((r) => r.instance)])].sort((a, b) => a - b);
    return instances.map((instance) => ({
      code: visit.code,
      name: visit.name,
      instance,
      repeating: visit.repeating,
      forms: visible
        .filter((f) => visit.forms.includes(f.code))
        .sort((a, b) => visit.forms.indexOf(a.code) - visit.forms.indexOf(b.code))
        .map((f) => formView(f, byPlace.get(`${visitId}|${instance}|${ids.forms.get(f.code)}`))),
    }));
  });
  const [queries, audit, imports] = await Promise.all([
    stores.portalReads.openQueries(patient.id, hidden),
    stores.portalReads.auditTrail(patient.id, hidden, CARD_AUDIT_LIMIT + 1),
    stores.portalReads.fhirImports(patient.id, hidden),
  ]);
  return {
    patient,
    site: sites.find((s) => s.id === patient.siteId)!,
    consent,
    visits,
    queries,
    audit: audit.slice(0, CARD_AUDIT_LIMIT).map((a) => {
      const form = visible.find((f) => f.code === a.form);
      return {
        ...a,
        oldView: auditValueView(a.action, form, a.field, a.oldValue, auditValueKind(a.details, 'old_value')),
        newView: auditValueView(a.action, form, a.field, a.newValue, auditValueKind(a.details, 'new_value')),
      };
    }),
    auditLimited: audit.length > CARD_AUDIT_LIMIT,
    imports,
  };
}
