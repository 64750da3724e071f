import type { NewWebhookEvent, QueryReadRow, Study } from '../stores.js';
import { studyEvent, type WebhookEventType } from '../webhooks/webhookEvents.js';

/**
 * The event of a step on a query (issue 22.5), for the outbox of the step's transaction: where the query
 * stands and its id, never its message or an answer's text (a receiver reads those with its key).
 */
export function queryEvent(study: Study, type: Extract<WebhookEventType, `query.${string}`>, query: QueryReadRow): NewWebhookEvent {
  return studyEvent(study, type, {
    subject: query.subject, site: query.site, visit: query.visit, instance: query.instance, form: query.form, fields: [query.field], query_id: query.id,
  });
}
