import { actorRef, authorOf, type Actor } from '../actor.js';
import { DomainError } from '../errors.js';
import type { WriteAccess } from '../records/submitRecords.js';
import type { AuditStore, PatientStore, QueryReadRow, QueryStore, Study, StudyStore, WebhookStore } from '../stores.js';
import { reachableQuery } from './reachableQuery.js';
import { answerRefusal, queryText } from './queryRules.js';
import { recordQueryStep } from './queryStep.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

/**
 * Answers a query (issue 22.2): the answer joins the query's thread and the query becomes `answered`,
 * waiting to be closed. The one path for an API key and a person on the portal. Run it in one transaction.
 *
 * @returns the query as it now is, thread included
 */
export async function answerQuery(
  stores: { studies: StudyStore; patients: PatientStore; queries: QueryStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  access: WriteAccess,
  study: Study,
  input: { queryId: number; text: string },
): Promise<QueryReadRow> {
  requireUnlocked(stores.audit, study);
  const text = queryText(input.text, '/text');
  const query = await reachableQuery(stores, access, study, input.queryId);
  const refusal = answerRefusal(query);
  if (refusal) throw new DomainError(refusal, { id: query.id });
  const answerId = await stores.queries.answer(query.id, { text, author: actorRef(actor), authorName: authorOf(actor) });
  return recordQueryStep(stores, actor, study, 'answered', query.id, {
    patientId: query.patientId, recordId: query.recordId, fieldCode: query.fieldCode, newValue: text, details: { query_id: query.id, answer_id: answerId },
  });
}
