import type { Knex } from 'knex';
import { apiKeyStore } from './apiKeys.js';
import { auditStore } from './auditEvents.js';
import { auditReadStore } from './auditReads.js';
import { exportStore } from './exports.js';
import { fhirImportReadStore } from './fhirImportReads.js';
import { fhirImportStore } from './fhirImports.js';
import { idempotencyKeyStore } from './idempotencyKeys.js';
import { patientStore } from './patients.js';
import { peopleStore } from './people.js';
import { portalReadStore } from './portalReads.js';
import { queryStore } from './queries.js';
import { readLogStore } from './readLog.js';
import { readStore } from './readPages.js';
import { recordStore } from './records.js';
import { sessionStore } from './sessions.js';
import { studyStore } from './studies.js';
import { withTransaction, type BeforeCommit, type IsolationLevel } from './transaction.js';
import { webhookStore } from './webhooks.js';

/**
 * Every store bound to one connection or transaction: what a use case receives. A transaction's stores
 * come from `inTransaction`, which gives them its commit step (the audit trail is written there).
 */
export function createStores(db: Knex, beforeCommit?: BeforeCommit) {
  return {
    studies: studyStore(db),
    people: peopleStore(db),
    patients: patientStore(db),
    apiKeys: apiKeyStore(db),
    audit: auditStore(db, beforeCommit),
    records: recordStore(db),
    queries: queryStore(db),
    reads: readStore(db),
    auditReads: auditReadStore(db),
    readLog: readLogStore(db),
    fhirImports: fhirImportStore(db),
    fhirImportReads: fhirImportReadStore(db),
    sessions: sessionStore(db),
    portalReads: portalReadStore(db),
    idempotencyKeys: idempotencyKeyStore(db),
    exports: exportStore(db),
    webhooks: webhookStore(db),
  };
}

/** Every store of the service, bound to one connection or transaction (a use case takes the few it needs). */
export type AllStores = ReturnType<typeof createStores>;

/** Runs a use case over stores bound to one transaction: all of its writes land together or not at all. */
export function inTransaction<T>(knex: Knex, fn: (stores: AllStores) => Promise<T>, options: { isolationLevel?: IsolationLevel } = {}): Promise<T> {
  return withTransaction(knex, (trx, beforeCommit) => fn(createStores(trx, beforeCommit)), options);
}
