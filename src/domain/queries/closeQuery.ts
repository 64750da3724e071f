import { actorRef, authorOf, reasonOf, type Actor } from '../actor.js';
import { DomainError } from '../errors.js';
import type { WriteAccess } from '../records/submitRecords.js';
import type { AuditStore, PatientStore, QueryReadRow, QueryStore, Study, StudyStore, WebhookStore } from '../stores.js';
import { reachableQuery } from './reachableQuery.js';
import { closeRefusal, queryText } from './queryRules.js';
import { recordQueryStep } from './queryStep.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

/**
 * Closes a query with a reason (issue 22.2): one the actor raised, or one that is answered. The one
 * path for an API key and a person on the portal. Run it in one transaction.
 *
 * @returns the query as it now is
 */
export async function closeQuery(
  stores: { studies: StudyStore; patients: PatientStore; queries: QueryStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  access: WriteAccess,
  study: Study,
  input: { queryId: number; reason: string },
): Promise<QueryReadRow> {
  requireUnlocked(stores.audit, study);
  const reason = queryText(input.reason, '/reason');
  const query = await reachableQuery(stores, access, study, input.queryId);
  const closer = actorRef(actor);
  const refusal = closeRefusal(query, closer);
  if (refusal) throw new DomainError(refusal, { id: query.id });
  await stores.queries.close([query.id], { type: closer.type, by: authorOf(actor), reason });
  return recordQueryStep(stores, actor, study, 'closed', query.id, {
    patientId: query.patientId, recordId: query.recordId, fieldCode: query.fieldCode, reason: reasonOf(actor, reason), details: { query_id: query.id },
  });
}
