/**
 * The stores the domain depends on, one per aggregate. `src/db` implements them over Knex, bound
 * to one transaction per use case; unit tests bind in-memory fakes.
 */
import type { ActorRef } from './actor.js';
import type { KeyStopReason } from './apiKeys/keyState.js';
import type { ChainedContent } from './auditChain.js';
import type { FhirImportCounts, FhirImportItem, ItemState } from './fhir/fhirImportItem.js';
import type { StudyDesign } from './studyDesign/types.js';
import type { WebhookEventType } from './webhooks/webhookEvents.js';

export interface Study {
  id: number;
  code: string;
  name: string;
  blinded: boolean;
  consentRequired: boolean;
  enrolmentOpen: boolean;
  locked: boolean;
  apiEnabled: boolean;
  subjectFormat: string;
  design: StudyDesign;
  designHash: string;
  /**
   * The study's sites and its visit and form ids, when the query that read the row brought them too
   * (an API request's key query does): they never change for a study row, and carrying them saves a
   * round trip on every call.
   */
  structure?: StudyStructure;
}

export interface Site { id: number; number: string; name: string }

/** Visit and form ids by code, for writing and reading records. */
export interface DesignIds { visits: Map<string, number>; forms: Map<string, number> }

export interface StudyStructure { sites: Site[]; ids: DesignIds }

export interface StudySettings { apiEnabled?: boolean; enrolmentOpen?: boolean; locked?: boolean }

export interface StudyStore {
  findByCode(code: string): Promise<Study | undefined>;
  /** Writes a study with its whole design (sites, visits, forms, fields, edit checks, mapping); returns its id. */
  insertDesign(design: StudyDesign, designHash: string): Promise<number>;
  updateSettings(studyId: number, settings: StudySettings): Promise<void>;
  /** The study's sites by number; from the row itself when it carries its structure. */
  sites(study: Pick<Study, 'id' | 'structure'>): Promise<Site[]>;
  /** Visit and form ids by code; from the row itself when it carries its structure. */
  designIds(study: Pick<Study, 'id' | 'structure'>): Promise<DesignIds>;
  /** Takes the next patient number of a site atomically (a row lock held to the end of the transaction). */
  takeNextSeq(siteId: number): Promise<number>;
}

export interface User { id: number; email: string; name: string; passwordHash: string | null }

export type RoleName = 'manager' | 'site_staff';

export interface Role {
  id: number;
  studyId: number;
  userId: number;
  role: RoleName;
  canExport: boolean;
  unblinded: boolean;
  allSites: boolean;
  /** The sites of the role: every site of the study when `allSites`. */
  siteIds: number[];
}

export interface PeopleStore {
  findUserByEmail(email: string): Promise<User | undefined>;
  findUserById(id: number): Promise<User | undefined>;
  insertUser(user: { email: string; name: string; passwordHash: string | null }): Promise<number>;
  updateUser(id: number, changes: { name?: string; passwordHash?: string | null }): Promise<void>;
  /**
   * A person's roles in a study. `forShare` holds them to the end of the transaction: a role change
   * under way is waited for (and read as it commits), and one that starts later waits for this transaction.
   */
  roles(studyId: number, userId: number, options?: { forShare?: boolean }): Promise<Role[]>;
  upsertRole(role: Omit<Role, 'id'>): Promise<number>;
  deleteRole(roleId: number): Promise<void>;
}

export interface AuditEntry {
  studyId: number;
  actorType: 'user' | 'api_key' | 'operator';
  actorId: number | null;
  author: string;
  reason: string;
  action: string;
  patientId?: number | null;
  recordId?: number | null;
  fieldCode?: string | null;
  oldValue?: string | null;
  newValue?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditStore {
  append(entries: AuditEntry[]): Promise<void>;
  /**
   * The transaction's rows about that study are appended only while the study is unlocked, checked in turn
   * with the study's other writers and its lock; appending them to a locked study fails with `study_locked`.
   */
  appendOnlyWhileUnlocked(studyId: number): void;
  /** A study's audit rows in id order with their chain links, for verification. */
  chain(studyId: number): Promise<(ChainedContent & { id: number; prevHash: string | null; hash: string | null })[]>;
  /** Takes the study's checkpoint lock to the end of the transaction: one process checkpoints a study at a time. */
  lockCheckpoints(studyId: number): Promise<void>;
}

export interface ApiKey {
  id: number;
  studyId: number;
  name: string;
  fingerprint: Buffer;
  hint: string;
  canRead: boolean;
  canWrite: boolean;
  canEnrol: boolean;
  termDays: number;
  expiresAt: Date;
  createdBy: number;
  createdAt: Date;
  revokedAt: Date | null;
  /** Why a role change of the maker stopped the key for good, if it did (stopKeysOfMaker). */
  stoppedReason: KeyStopReason | null;
  lastUsedAt: Date | null;
  requestCount: number;
  rowsRead: number;
  siteIds: number[];
}

/** A key together with the facts about its maker that decide whether it still works. */
export interface ApiKeyWithMaker extends ApiKey {
  studyCode: string;
  makerName: string;
  makerIsManager: boolean;
  makerCanExport: boolean;
  makerUnblinded: boolean;
  /** The sites the maker may see now (a key never reaches further than its maker). */
  makerSiteIds: number[];
}

export interface ApiKeyStore {
  insert(key: Omit<ApiKey, 'id' | 'createdAt' | 'revokedAt' | 'stoppedReason' | 'lastUsedAt' | 'requestCount' | 'rowsRead'>): Promise<ApiKey>;
  findByFingerprint(fingerprint: Buffer): Promise<ApiKeyWithMaker | undefined>;
  findById(studyId: number, id: number): Promise<ApiKeyWithMaker | undefined>;
  list(studyId: number): Promise<ApiKeyWithMaker[]>;
  revoke(id: number, byUserId: number): Promise<void>;
  /** Stops a key for good, unless it is already stopped or revoked; whether it did. */
  stop(id: number, reason: KeyStopReason): Promise<boolean>;
}

export interface Patient {
  id: number;
  studyId: number;
  siteId: number;
  subject: string;
  sex: string;
  birthYear: number;
  enrolledOn: string;
  status: string;
  dataUseWithdrawnAt: Date | null;
  /** The hospital identifiers linked on the first confirmed FHIR import, if any. */
  fhirIdentity: { system?: string; value: string }[] | null;
}

export interface Consent { givenOn: string | null; withdrawnOn: string | null; dataUseWithdrawn: boolean }

export interface PatientStore extends PatientLookup {
  findBySubject(studyId: number, subject: string): Promise<Patient | undefined>;
  /** Inserts a patient; throws DomainError('subject_taken') when the subject exists, leaving the transaction usable. */
  insert(patient: Omit<Patient, 'id' | 'status' | 'dataUseWithdrawnAt' | 'fhirIdentity'>): Promise<Patient>;
  subjectExists(studyId: number, subject: string): Promise<boolean>;
  latestConsent(patientId: number): Promise<Consent | undefined>;
  insertConsent(patientId: number, consent: Consent): Promise<void>;
  markDataUseWithdrawn(patient: Patient): Promise<void>;
  /** Sets the patient's study status (`PatientStatus` in the spec), stamping the row as changed for incremental loads. */
  setStatus(patientId: number, status: 'enrolled' | 'withdrawn'): Promise<void>;
}

interface PatientLookup {
  /** Patients of a study by subject, with their latest consent: one query for a whole request. */
  findBySubjects(studyId: number, subjects: string[]): Promise<(Patient & { consent: Consent | undefined })[]>;
}

/** Where a form instance lives: one record per patient, visit occurrence and form. */
export interface RecordKey { patientId: number; visitId: number; formId: number; instance: number }

export interface StoredRecord extends RecordKey {
  id: number;
  status: 'complete' | 'draft';
  values: Record<string, string>;
  notDone: Record<string, 'ND' | 'UNK' | 'NA'>;
  tables: Record<string, Record<string, string>[]>;
}

export interface RecordStore extends PatientRecords {
  /** The saved records among these keys, read in one query; with `lock`, row-locked to the end of the transaction. */
  findByKeys(keys: RecordKey[], options?: { lock: boolean }): Promise<StoredRecord[]>;
  /**
   * Inserts the form instances in one statement, each unless it exists: returns the keys and ids of
   * those inserted, so two concurrent writers save an instance once and the other learns it lost.
   */
  insertMany(records: (Omit<StoredRecord, 'id'> & { studyId: number; siteId: number; source: string })[]): Promise<(RecordKey & { id: number })[]>;
  /** Replaces the content of records in one statement; their `source` stays the one of their first save. */
  updateMany(changes: Pick<StoredRecord, 'id' | 'status' | 'values' | 'notDone' | 'tables'>[]): Promise<void>;
}

export interface NewQuery {
  studyId: number;
  recordId: number;
  patientId: number;
  siteId: number;
  fieldCode: string;
  origin: 'range' | 'edit_check' | 'visit_window' | 'manual';
  checkCode: string | null;
  message: string;
  /** The opener's name as the trail shows it; for an automatic query, the author of the value that caused it. */
  openedBy: string;
  /** Who raised a manual query, so that it may close it; absent for automatic queries, which the service opens. */
  opener?: ActorRef;
}

export type QueryStatus = 'open' | 'answered' | 'closed';

/** A query as a step on it (answer, close) needs it: where it stands, and who raised it. */
export interface QueryForStep {
  id: number;
  studyId: number;
  recordId: number;
  patientId: number;
  subject: string;
  siteId: number;
  formId: number;
  fieldCode: string;
  origin: string;
  status: QueryStatus;
  opener: ActorRef | null;
}

/** Who closes a query: an actor, or the service when the value that caused an automatic query is corrected. */
interface QueryClosing {
  type: ActorRef['type'] | 'system';
  /** The closer's name; for the service, the author of the correcting value. */
  by: string;
  reason: string;
}

export interface QueryStore {
  /** The record's automatic and manual queries not yet closed (open or answered). */
  openForRecords(recordIds: number[]): Promise<{ id: number; recordId: number; fieldCode: string; origin: string; checkCode: string | null }[]>;
  /** Inserts the queries in one statement; returns their ids in the order given. */
  insert(queries: NewQuery[]): Promise<number[]>;
  /** Closes the queries that are not closed yet. */
  close(ids: number[], closing: QueryClosing): Promise<void>;
  /** The study's query of that id, row-locked to the end of the transaction so that steps on it apply one after the other. */
  findForStep(studyId: number, id: number): Promise<QueryForStep | undefined>;
  /** Adds an answer to the query's thread and marks the query answered; returns the answer's id. */
  answer(queryId: number, answer: { text: string; author: ActorRef; authorName: string }): Promise<number>;
  /** The query as the read calls show it, thread included. */
  read(id: number): Promise<QueryReadRow>;
}

/** What a reading key may see: its sites, and not the forms of the unblinded team unless its maker is unblinded. */
export interface ReadScope {
  studyId: number;
  siteIds: number[];
  hiddenFormIds: number[];
}

export interface ReadFilters {
  siteId?: number;
  subject?: string;
  visitId?: number;
  formId?: number;
  status?: string;
}

export interface PageRequest {
  afterId: number;
  limit: number;
  updatedSince: string | null;
  /**
   * The watermark of the run the page belongs to (fixed on its first page). The query does not use it: a page
   * read ahead for one run is served to that run only (src/db/readAhead.ts).
   */
  watermark: string;
}

export interface PatientReadRow { id: number; subject: string; site: string; sex: string; enrolledOn: string; status: string; updatedAt: Date }
/** JSON text written by the database (spaced as PostgreSQL spaces it), passed through to the answer without being parsed. */
type JsonText = string;

/**
 * A record as a read page returns it: its id (the page's position) and the record as the answer shows
 * it (`RecordRead` in the spec), written by the database. A bulk load reads 100,000 of them, and
 * decoding their columns into objects only to write them out again was most of its cost.
 */
export interface RecordReadRow {
  id: number;
  json: JsonText;
}
export interface QueryReadRow {
  id: number; subject: string; site: string; visit: string; instance: number; form: string; field: string; status: string;
  origin: string; message: string; openedAt: Date; closedAt: Date | null; updatedAt: Date;
  openedBy: string;
  /** The actor type of a manual query's opener; null for automatic queries and manual ones raised before it was kept. */
  openedByType: string | null;
  answers: QueryAnswerRow[];
  closedBy: string | null;
  closedByType: string | null;
  closeReason: string | null;
}
/** One answer of a query's thread; its time comes as the database wrote it, ISO 8601 UTC. */
interface QueryAnswerRow { id: number; text: string; authorType: string; author: string; answeredAt: string }
export interface RemovalRow { subject: string; site: string; reason: string; removedAt: Date }

/** Keyset pages (ordered by id, no OFFSET) over what a key may read; each page is one indexed query. */
export interface ReadStore {
  patientsPage(scope: ReadScope, filters: ReadFilters, page: PageRequest): Promise<PatientReadRow[]>;
  recordsPage(scope: ReadScope, filters: ReadFilters, page: PageRequest): Promise<RecordReadRow[]>;
  queriesPage(scope: ReadScope, filters: ReadFilters, page: PageRequest): Promise<QueryReadRow[]>;
  removals(scope: ReadScope, filters: ReadFilters, since: string): Promise<RemovalRow[]>;
  /**
   * The time from which a later incremental load must ask so it misses nothing: now, or the start
   * of the oldest transaction still open, whichever is earlier (rows carry their transaction's start time),
   * set back by a small margin more. Read it before the page's own query, in a read-committed transaction.
   */
  watermark(): Promise<Date>;
}

/** A FHIR import as the read calls show it: who decided is a name, never an id or an e-mail. */
export interface FhirImportReadRow {
  id: number;
  subject: string;
  site: string;
  number: number;
  mode: FhirImport['mode'];
  status: FhirImport['status'];
  counts: FhirImportCounts;
  createdAt: Date;
  /** When it was decided, else made: the rows' `updated_at` for incremental loads. */
  updatedAt: Date;
  /** The decision's time; the making's for `saved`, which nobody decided afterwards. */
  decidedAt: Date | null;
  /** The deciding person's name, or `<key name> (API)` for `saved`. */
  decidedBy: string | null;
  rejectionReason: string | null;
  items: FhirImportItem[] | null;
}

/** The read calls on FHIR imports, with the visibility rules of the other read calls. */
export interface FhirImportReadStore {
  /**
   * A page of imports by id, without items; their counts leave out the items on the scope's hidden forms.
   * Filters: subject, status.
   */
  page(scope: ReadScope, filters: ReadFilters, page: PageRequest): Promise<FhirImportReadRow[]>;
  /** The patient's import of that number with its items, when the scope lets the key see it. */
  find(scope: ReadScope, subject: string, number: number): Promise<FhirImportReadRow | undefined>;
}

export interface ReadLogStore {
  /** Logs one read and adds its rows to the key's counter, in the same transaction. */
  logRead(entry: { keyId: number; studyId: number; operation: string; filters: Record<string, unknown>; rows: number }): Promise<void>;
  /** The study's last `limit` reads, newest first, with the name of the key that made each. */
  lastReads(studyId: number, limit: number): Promise<ReadLogRow[]>;
}

export interface ReadLogRow { id: number; keyId: number; keyName: string; at: Date; operation: string; filters: Record<string, unknown>; rows: number }

interface FhirImport {
  id: number;
  patientId: number;
  number: number;
  mode: 'review' | 'save';
  status: 'proposed' | 'saved' | 'confirmed' | 'rejected';
  counts: FhirImportCounts;
  /** The hospital identifiers the file carried, linked to the patient by the first confirmed import. */
  fhirIdentity: { system?: string; value: string }[] | null;
}

/** A stored import with its items in file order (an item's index is its `position`), and its decision. */
export interface StoredFhirImport extends FhirImport {
  studyId: number;
  decidedAt: Date | null;
  decidedBy: number | null;
  items: FhirImportItem[];
}

/**
 * An item's new state and row after a confirmation, by position, with the outcome the state alone does
 * not tell (saved by this confirmation, or a conflict whose saved value was kept), for the read calls.
 */
export interface ItemChange {
  position: number;
  state: ItemState;
  row: number | null;
  outcome: 'confirmed' | 'kept_saved_value';
  /** A picked tie: the chosen candidate's resource and value. */
  picked?: { resource: string; value: string };
}

export interface FhirImportStore {
  /** The patient's next import number, taken under a lock on the patient so concurrent imports get distinct numbers. */
  nextNumber(patientId: number): Promise<number>;
  /**
   * `contentHash` is the SHA-256 of the file's resources (see `fhirContentHash`); `unblindedTeamItems`, whether an
   * item is on a form hidden from blinded people (the audit read keeps the import's rows from them then).
   */
  insert(row: Omit<FhirImport, 'id'> & { studyId: number; apiKeyId: number | null; contentHash: string; unblindedTeamItems: boolean }, items: FhirImportItem[]): Promise<number>;
  /**
   * The patient's import of that mode and content still waiting for review, if any. Takes the lock on
   * the patient first, as `nextNumber` does, so that the same file sent twice at once is imported once.
   */
  findProposedByContent(patientId: number, mode: 'review' | 'save', contentHash: string): Promise<StoredFhirImport | undefined>;
  /** The patient's import of that number with its items, row-locked to the end of the transaction so that decisions on it apply one after the other. */
  findForDecision(patientId: number, number: number): Promise<StoredFhirImport | undefined>;
  /**
   * Sets the state, row and outcome of items, by position; with `picked`, a tie's resolution: the picked
   * candidate's resource and value, and no skip reason any more.
   */
  updateItems(importId: number, changes: ItemChange[]): Promise<void>;
  /** Records the site team's decision: the final status, when and by whom, the counts after it, and a rejection's reason. */
  decide(importId: number, decision: { status: 'confirmed' | 'rejected'; decidedBy: number; counts: FhirImportCounts; reason?: string | null }): Promise<void>;
  /** Links the hospital identity to the patient unless one is linked already; true when it was linked now. */
  linkPatientIdentity(patientId: number, identity: { system?: string; value: string }[]): Promise<boolean>;
}

interface PatientRecords {
  /** Every saved record of a patient (the FHIR mapping compares against them). */
  forPatient(patientId: number): Promise<StoredRecord[]>;
}

/** Where an `Idempotency-Key` counts: one API key's use of it on one operation (a key belongs to one study). */
export interface IdempotencyScope { apiKeyId: number; operation: string; key: string }

/** The `Idempotency-Key`s of write requests and their first answers (src/domain/idempotency/onceForKey.ts). */
export interface IdempotencyKeyStore {
  /**
   * Claims the key for the calling transaction, or returns the claim that holds it. A claim of a
   * transaction still running is waited for; a claim older than `lifetimeHours` is taken over.
   */
  claim(scope: IdempotencyScope, fingerprint: string, lifetimeHours: number): Promise<{ fingerprint: string; result: unknown } | undefined>;
  /** Keeps the answer of a key claimed by the calling transaction, and removes some keys older than `lifetimeHours`. */
  keepResult(scope: IdempotencyScope, result: unknown, lifetimeHours: number): Promise<void>;
}

/** A saved record as the CDISC exports read it, with the last audited change of each field when asked for. */
export interface ExportRecord {
  subject: string;
  site: string;
  visit: string;
  form: string;
  instance: number;
  status: string;
  values: Record<string, string>;
  notDone: Record<string, string>;
  tables: Record<string, Record<string, string>[]>;
  updatedAt: Date;
  /** Field code → its last change in the audit trail; only with `withAudit`. */
  lastChanges?: Record<string, FieldChange>;
}

/** One value's last change, as ODM's AuditRecord carries it. */
export interface FieldChange { auditId: number; at: Date; author: string; actorType: string; actorId: number | null; reason: string }

/** Counts and streams of one consistent snapshot of the database, for an export of any size. */
export interface ExportSnapshot {
  /** Records of the forms that the scope may see or, with `table`, the rows of that table field in them. */
  count(scope: ReadScope, formIds: number[], table?: string): Promise<number>;
  /** Who set or changed the values of those records (the users their AuditRecords name), for ODM's AdminData: one entry per actor, with its latest name. */
  authors(scope: ReadScope, formIds: number[]): Promise<{ actorType: string; actorId: number | null; author: string }[]>;
  /** When the newest of those records changed; null when there is none. */
  lastModified(scope: ReadScope, formIds: number[]): Promise<Date | null>;
  /**
   * The records of the forms, by subject, visit order, instance and form order, read as they are needed,
   * in the batches they are fetched in: a row passes one step of iteration per batch, not per record.
   */
  recordBatches(scope: ReadScope, formIds: number[], options: { withAudit: boolean }): AsyncIterable<ExportRecord[]>;
  /** Ends the snapshot; safe to call twice. */
  close(): Promise<void>;
}

export interface ExportStore {
  openSnapshot(): Promise<ExportSnapshot>;
}

/** What a webhook body's `data` names (spec: components/schemas/Webhook*Data): ids and codes, never values. */
export interface WebhookEventData {
  study: string;
  subject: string;
  site: string;
  visit?: string;
  instance?: number;
  form?: string;
  fields?: string[];
  query_id?: number;
  import_id?: string;
}

export interface NewWebhookEvent {
  studyId: number;
  type: WebhookEventType;
  data: WebhookEventData;
  /** About a form of the unblinded team in a blinded study: only for subscriptions that may see it. */
  unblindedOnly: boolean;
}

export type WebhookState = 'active' | 'failing' | 'removed';

/** Why a waiting delivery was not sent: its subscription may no longer receive the event (webhooks.ts, withheldReasonSql). */
export type WithheldReason = 'creator_not_manager' | 'site_not_covered' | 'creator_blinded';

export interface WebhookSubscriptionRow {
  id: number;
  studyId: number;
  url: string;
  eventTypes: WebhookEventType[];
  unblinded: boolean;
  state: WebhookState;
  createdBy: number | null;
  createdAt: Date;
  stateChangedAt: Date;
}

/** Where a delivery stands: sent, withheld (never to be sent), or waiting for its turn or its next attempt. */
type WebhookDeliveryState = 'delivered' | 'withheld' | 'pending';

/** One event owed to one subscription, with its last attempt: a line of the delivery log. */
export interface WebhookDeliveryRow {
  id: number;
  state: WebhookDeliveryState;
  subscriptionId: number;
  eventId: number;
  eventType: WebhookEventType;
  createdAt: Date;
  attempts: number;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  /** When the worker found, at send time, that the subscription may no longer receive the event: it is never sent. */
  withheldAt: Date | null;
  withheldReason: WithheldReason | null;
}

export interface WebhookStore {
  /**
   * Writes events to the outbox in the calling transaction, each owed to every subscription of its study
   * (not removed) that chose its type and may see it; an event nobody subscribed to is not kept.
   */
  publish(events: NewWebhookEvent[]): Promise<void>;
  insertSubscription(row: Omit<WebhookSubscriptionRow, 'id' | 'state' | 'createdAt' | 'stateChangedAt'> & { secret: string }): Promise<WebhookSubscriptionRow>;
  /** The study's subscriptions that are not removed, oldest first. */
  subscriptions(studyId: number): Promise<WebhookSubscriptionRow[]>;
  findSubscription(studyId: number, id: number): Promise<WebhookSubscriptionRow | undefined>;
  /** Sets the state; re-enabling also makes the waiting event due now, so delivery resumes at once. */
  setState(id: number, state: WebhookState): Promise<void>;
  /** The study's latest deliveries, newest event first, of one subscription or of all. */
  deliveries(studyId: number, subscriptionId: number | undefined, limit: number): Promise<WebhookDeliveryRow[]>;
}
