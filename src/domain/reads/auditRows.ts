import type { PageRequest, ReadFilters, ReadScope } from '../stores.js';

/**
 * The audit actions a key reads (issue 22.3): those about a patient's enrolment, consent, data, queries
 * and FHIR imports. A list of what may be shown, not of what may not: an action added later stays out
 * of the integrators' view until someone decides it may go there. Left out:
 * `patient.fhir_identity_linked`, whose new value is the patient's hospital identifiers (private, like
 * the birth year), and every row about no patient (`api_key.*`, `role.granted`, `study.settings_changed`),
 * which concerns the study's staff and other keys, not data the key may read.
 */
export const AUDIT_ACTIONS_FOR_KEYS = [
  'patient.enrolled',
  'consent.given',
  'consent.withdrawn',
  'record.value_set',
  'record.value_changed',
  'record.status_changed',
  'query.opened',
  'query.answered',
  'query.closed',
  'fhir.import_proposed',
  'fhir.import_saved',
  'fhir.import_confirmed',
  'fhir.import_rejected',
] as const;

/**
 * The actions about a FHIR import as a whole. Their details count the import's items and name the positions
 * a decision saved, kept and left out, those on the unblinded team's forms included, and the hash chain
 * keeps them as written: a key whose maker is blinded gets no such row of an import that holds an item on
 * a form hidden from it (src/db/auditReads.ts), as the FHIR reads recount what they show (importReads.ts).
 */
export const FHIR_IMPORT_ACTIONS = ['fhir.import_proposed', 'fhir.import_saved', 'fhir.import_confirmed', 'fhir.import_rejected'] as const;

/**
 * An audit row as the audit read returns it: what a person reads, plus every member its chain hash
 * covers (src/domain/auditChain.ts), so a sponsor recomputes the hash from the row alone.
 */
export interface AuditReadRow {
  id: number;
  /** The row's place in its study's chain, from 1, counting rows the key does not see. */
  position: number;
  at: string;
  author: string;
  reason: string;
  action: string;
  subject: string;
  site: string;
  visit: string | null;
  form: string | null;
  instance: number | null;
  fieldCode: string | null;
  oldValue: string | null;
  newValue: string | null;
  details: Record<string, unknown>;
  actorType: string;
  actorId: number | null;
  studyId: number;
  patientId: number;
  recordId: number | null;
  prevHash: string;
  hash: string;
}

/** Keyset pages of the audit rows a key may see (src/db/auditReads.ts). */
export interface AuditReadStore {
  auditPage(scope: ReadScope, filters: ReadFilters, page: PageRequest): Promise<AuditReadRow[]>;
}
