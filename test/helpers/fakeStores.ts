import type {
  AuditEntry, AuditStore, Consent, NewQuery, NewWebhookEvent, WebhookStore, Patient, PatientStore, QueryStore, RecordKey, RecordStore, Site, StoredRecord,
  Study, StudyStore,
} from '../../src/domain/stores.js';
import { DomainError } from '../../src/domain/errors.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';

/**
 * In-memory stores (src/domain/stores.ts) for unit tests of the domain's use cases: what src/db
 * keeps in tables they keep in arrays, public so that a test reads exactly what a use case wrote.
 * They hold one transaction's view and have no other writer, so row locks are no-ops; a method the
 * use cases under test never call throws, so a test cannot pass through a fake that fakes nothing.
 */

/* eslint-disable @typescript-eslint/require-await -- the fakes implement the stores' async interfaces in memory:
   `async` keeps each answer and each throw a promise, as the real stores' are, with nothing to await. */

const keyOf = (k: RecordKey) => `${k.patientId}|${k.visitId}|${k.formId}|${k.instance}`;
const copy = <T>(value: T): T => structuredClone(value);

function notFaked(name: string): never {
  throw new Error(`fakeStores: ${name} is not faked; add it to test/helpers/fakeStores.ts when a use case needs it`);
}

class FakeStudyStore implements StudyStore {
  readonly rows: Study[] = [];
  private nextId = 1;

  async findByCode(code: string): Promise<Study | undefined> {
    return this.rows.find((s) => s.code === code);
  }

  /**
   * Gives the study's sites, visits and forms ids, and the row the structure they make. No two of them
   * share an id, so a use case that took a visit's id for a form's would find nothing.
   */
  async insertDesign(design: StudyDesign, designHash: string): Promise<number> {
    const id = this.nextId++;
    let nextPartId = id * 1000;
    const sites: Site[] = design.sites.map((s) => ({ id: nextPartId++, number: s.number, name: s.name }));
    const visits = new Map(design.visits.map((v) => [v.code, nextPartId++]));
    const forms = new Map(design.forms.map((f) => [f.code, nextPartId++]));
    this.rows.push({
      id, code: design.code, name: design.name, blinded: design.blinded, consentRequired: design.consent_required,
      enrolmentOpen: design.enrolment_open, locked: false, apiEnabled: true, subjectFormat: design.subject_format,
      design, designHash, structure: { sites, ids: { visits, forms } },
    });
    return id;
  }

  async updateSettings(): Promise<void> {
    notFaked('studies.updateSettings');
  }

  async sites(study: Pick<Study, 'id' | 'structure'>): Promise<Site[]> {
    return this.structureOf(study).sites;
  }

  async designIds(study: Pick<Study, 'id' | 'structure'>) {
    return this.structureOf(study).ids;
  }

  async takeNextSeq(): Promise<number> {
    return notFaked('studies.takeNextSeq');
  }

  private structureOf(study: Pick<Study, 'id' | 'structure'>) {
    return study.structure ?? this.rows.find((s) => s.id === study.id)!.structure!;
  }
}

class FakePatientStore implements PatientStore {
  readonly rows: Patient[] = [];
  /** Consent records by patient id, oldest first. */
  readonly consents = new Map<number, Consent[]>();
  private nextId = 1;

  async findBySubject(studyId: number, subject: string): Promise<Patient | undefined> {
    return this.rows.find((p) => p.studyId === studyId && p.subject === subject);
  }

  async findBySubjects(studyId: number, subjects: string[]) {
    return this.rows.filter((p) => p.studyId === studyId && subjects.includes(p.subject)).map((p) => ({ ...p, consent: this.consents.get(p.id)?.at(-1) }));
  }

  async insert(patient: Omit<Patient, 'id' | 'status' | 'dataUseWithdrawnAt' | 'fhirIdentity'>): Promise<Patient> {
    if (await this.subjectExists(patient.studyId, patient.subject)) throw new DomainError('subject_taken', { subject: patient.subject });
    const row: Patient = { ...patient, id: this.nextId++, status: 'enrolled', dataUseWithdrawnAt: null, fhirIdentity: null };
    this.rows.push(row);
    return row;
  }

  async subjectExists(studyId: number, subject: string): Promise<boolean> {
    return (await this.findBySubject(studyId, subject)) !== undefined;
  }

  async latestConsent(patientId: number): Promise<Consent | undefined> {
    return this.consents.get(patientId)?.at(-1);
  }

  async insertConsent(patientId: number, consent: Consent): Promise<void> {
    this.consents.set(patientId, [...this.consents.get(patientId) ?? [], consent]);
  }

  async markDataUseWithdrawn(): Promise<void> {
    notFaked('patients.markDataUseWithdrawn');
  }

  async setStatus(): Promise<void> {
    notFaked('patients.setStatus');
  }
}

type FakeRecord = StoredRecord & { studyId: number; siteId: number; source: string };

class FakeRecordStore implements RecordStore {
  readonly rows: FakeRecord[] = [];
  private nextId = 1;

  async findByKeys(keys: RecordKey[]): Promise<StoredRecord[]> {
    const wanted = new Set(keys.map(keyOf));
    return copy(this.rows.filter((r) => wanted.has(keyOf(r))));
  }

  async insertMany(records: Omit<FakeRecord, 'id'>[]): Promise<(RecordKey & { id: number })[]> {
    const inserted = records.filter((r) => !this.rows.some((saved) => keyOf(saved) === keyOf(r))).map((r) => ({ ...copy(r), id: this.nextId++ }));
    this.rows.push(...inserted);
    return inserted.map(({ patientId, visitId, formId, instance, id }) => ({ patientId, visitId, formId, instance, id }));
  }

  async updateMany(changes: Pick<StoredRecord, 'id' | 'status' | 'values' | 'notDone' | 'tables'>[]): Promise<void> {
    for (const change of changes) Object.assign(this.rows.find((r) => r.id === change.id)!, copy(change));
  }

  async forPatient(patientId: number): Promise<StoredRecord[]> {
    return copy(this.rows.filter((r) => r.patientId === patientId));
  }
}

type FakeQuery = NewQuery & { id: number; status: 'open' | 'closed' };

class FakeQueryStore implements QueryStore {
  readonly rows: FakeQuery[] = [];

  async openForRecords(recordIds: number[]) {
    return this.rows.filter((q) => q.status === 'open' && recordIds.includes(q.recordId))
      .map(({ id, recordId, fieldCode, origin, checkCode }) => ({ id, recordId, fieldCode, origin, checkCode }));
  }

  async insert(queries: NewQuery[]): Promise<number[]> {
    return queries.map((q) => {
      const id = this.rows.length + 1;
      this.rows.push({ ...copy(q), id, status: 'open' });
      return id;
    });
  }

  async close(ids: number[]): Promise<void> {
    for (const q of this.rows) if (ids.includes(q.id)) q.status = 'closed';
  }

  async findForStep(): Promise<never> {
    return notFaked('queries.findForStep');
  }

  async answer(): Promise<never> {
    return notFaked('queries.answer');
  }

  async read(): Promise<never> {
    return notFaked('queries.read');
  }
}

class FakeAuditStore implements AuditStore {
  readonly entries: AuditEntry[] = [];

  async append(entries: AuditEntry[]): Promise<void> {
    this.entries.push(...copy(entries));
  }

  /** A fake study is locked or not for a whole use case: the study a use case is given says which. */
  appendOnlyWhileUnlocked(): void {}

  async chain(): Promise<never> {
    return notFaked('audit.chain');
  }

  async lockCheckpoints(): Promise<void> {
    notFaked('audit.lockCheckpoints');
  }
}

/** The outbox as a list: what a use case published, in order. */
class FakeWebhookStore implements WebhookStore {
  readonly published: NewWebhookEvent[] = [];

  async publish(events: NewWebhookEvent[]): Promise<void> {
    this.published.push(...copy(events));
  }

  async insertSubscription(): Promise<never> {
    return notFaked('webhooks.insertSubscription');
  }

  async subscriptions(): Promise<never> {
    return notFaked('webhooks.subscriptions');
  }

  async findSubscription(): Promise<never> {
    return notFaked('webhooks.findSubscription');
  }

  async setState(): Promise<never> {
    return notFaked('webhooks.setState');
  }

  async deliveries(): Promise<never> {
    return notFaked('webhooks.deliveries');
  }
}

export interface FakeStores {
  studies: FakeStudyStore;
  patients: FakePatientStore;
  records: FakeRecordStore;
  queries: FakeQueryStore;
  audit: FakeAuditStore;
  webhooks: FakeWebhookStore;
}

/** A fresh, empty set of in-memory stores. */
export function fakeStores(): FakeStores {
  return {
    studies: new FakeStudyStore(), patients: new FakePatientStore(), records: new FakeRecordStore(), queries: new FakeQueryStore(), audit: new FakeAuditStore(),
    webhooks: new FakeWebhookStore(),
  };
}
