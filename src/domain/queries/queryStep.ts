import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import type { AuditStore, QueryReadRow, QueryStore, Study, WebhookStore } from '../stores.js';
import { queryEvent } from './queryEvent.js';

/** What the audit row of a step on a query holds besides its action, its study and its author. */
type StepEntry = Omit<Parameters<typeof auditEntry>[2], 'action'>;

/**
 * What every step on a query (opened, answered, closed) ends with, in the step's transaction: its row in
 * the audit trail, the query read back as it now stands, and the step's event in the webhook outbox.
 *
 * @returns the query as it now is, thread included
 */
export async function recordQueryStep(
  stores: { queries: QueryStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  study: Study,
  step: 'opened' | 'answered' | 'closed',
  queryId: number,
  entry: StepEntry,
): Promise<QueryReadRow> {
  await stores.audit.append([auditEntry(actor, study.id, { ...entry, action: `query.${step}` })]);
  const stepped = await stores.queries.read(queryId);
  await stores.webhooks.publish([queryEvent(study, `query.${step}`, stepped)]);
  return stepped;
}
