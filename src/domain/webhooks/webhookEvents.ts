import type { NewWebhookEvent, Study, WebhookEventData } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';

/** The events a study sends (spec/openapi.yaml, `webhooks`), in the order the spec lists them. */
export const WEBHOOK_EVENT_TYPES = [
  'patient.enrolled', 'record.saved', 'record.changed', 'query.opened', 'query.answered', 'query.closed',
  'fhir_import.proposed', 'fhir_import.decided', 'consent.withdrawn',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/**
 * An event about the study, for the outbox of the transaction that makes the change. `data` holds ids
 * and codes only, never a value (issue 22.5): a receiver reads the rest with its key, under its rules.
 * An event about a form of the unblinded team goes only to subscriptions that may see that team's forms.
 */
export function studyEvent(
  study: Pick<Study, 'id' | 'code' | 'blinded' | 'design'>,
  type: WebhookEventType,
  data: Omit<WebhookEventData, 'study'>,
): NewWebhookEvent {
  const form = data.form === undefined ? undefined : study.design.forms.find((f) => f.code === data.form);
  return { studyId: study.id, type, data: { study: study.code, ...data }, unblindedOnly: form !== undefined && formHidden(study, form, false) };
}
