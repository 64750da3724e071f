import { randomBytes } from 'node:crypto';
import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import type { AuditStore, PeopleStore, Study, StudyStore, WebhookDeliveryRow, WebhookStore, WebhookSubscriptionRow } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';
import { checkResolvedAddresses, checkWebhookUrl, type AddressPolicy } from './addressPolicy.js';
import { isWebhookEventType, type WebhookEventType } from './webhookEvents.js';

type Stores = { studies: StudyStore; people: PeopleStore; audit: AuditStore; webhooks: WebhookStore };

/** Resolves a host name to its IP addresses (the service's DNS); injected so the rules stay free of I/O. */
export type ResolveHost = (host: string) => Promise<string[]>;

/** The most deliveries a log shows at once. */
const MAX_DELIVERIES_SHOWN = 500;

/**
 * A person must manage the study to manage its subscriptions, whichever sites their role covers; the
 * operator's command line may. What a person's subscription receives follows their role when each event is
 * written and again when it is sent (withheldReasonSql in src/db/webhooks.ts), as their keys follow it at each request.
 */
async function requireManager(stores: Stores, actor: Actor, study: Study): Promise<void> {
  if (actor.kind === 'operator') return;
  if (actor.kind !== 'user') throw new DomainError('not_a_manager', { email: '', study: study.code });
  const manager = (await stores.people.roles(study.id, actor.userId)).some((r) => r.role === 'manager');
  if (!manager) throw new DomainError('not_a_manager', { email: actor.name, study: study.code });
}

/** Whether a person sees the study's unblinded-team forms. */
async function personUnblinded(stores: Stores, actor: Actor, studyId: number): Promise<boolean> {
  return actor.kind === 'user' && (await stores.people.roles(studyId, actor.userId)).some((r) => r.role === 'manager' && r.unblinded);
}

/** The signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function eventTypesOf(events: string[]): WebhookEventType[] {
  const unknown = events.filter((e) => !isWebhookEventType(e));
  if (events.length === 0 || unknown.length > 0) throw new DomainError('webhook_events_invalid', { events: unknown.join(', ') });
  return [...new Set(events as WebhookEventType[])];
}

/**
 * Subscribes an address to some of the study's events. The secret is returned here once; the service
 * keeps it to sign deliveries but never shows it again. The address is checked now (its form, and the
 * addresses its name resolves to) and again at every delivery.
 * A person's subscription is made unblinded if they are unblinded now; it then receives unblinded-team
 * events only while they still are, when each is written and when it is sent (withheldReasonSql in src/db/webhooks.ts).
 * @param input.unblinded - for the operator only: whether unblinded-team events go to it (a person's own role decides otherwise)
 * @throws DomainError `study_not_found`, `not_a_manager`, `webhook_url_refused`, `webhook_events_invalid`
 */
export async function addSubscription(
  stores: Stores,
  actor: Actor,
  input: { study: string; url: string; events: string[]; unblinded?: boolean },
  policy: AddressPolicy,
  resolve: ResolveHost,
): Promise<{ subscription: WebhookSubscriptionRow; secret: string }> {
  const study = await requireStudy(stores.studies, input.study);
  await requireManager(stores, actor, study);
  const eventTypes = eventTypesOf(input.events);
  const url = checkWebhookUrl(input.url.trim(), policy);
  checkResolvedAddresses(url.href, await resolve(url.hostname.replace(/^\[(.*)\]$/, '$1')).catch(() => []), policy);
  const unblinded = actor.kind === 'operator' ? input.unblinded === true : await personUnblinded(stores, actor, study.id);
  const secret = newSecret();
  const subscription = await stores.webhooks.insertSubscription({
    studyId: study.id, url: url.href, eventTypes, unblinded, secret, createdBy: actor.kind === 'user' ? actor.userId : null,
  });
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'webhook.subscribed', details: { subscription_id: subscription.id, url: url.href, events: eventTypes, unblinded },
  })]);
  return { subscription, secret };
}

export async function listSubscriptions(stores: Stores, actor: Actor, input: { study: string }): Promise<WebhookSubscriptionRow[]> {
  const study = await requireStudy(stores.studies, input.study);
  await requireManager(stores, actor, study);
  return stores.webhooks.subscriptions(study.id);
}

async function requireSubscription(stores: Stores, actor: Actor, input: { study: string; id: number }) {
  const study = await requireStudy(stores.studies, input.study);
  await requireManager(stores, actor, study);
  const subscription = await stores.webhooks.findSubscription(study.id, input.id);
  if (!subscription) throw new DomainError('webhook_not_found', { id: input.id });
  return { study, subscription };
}

/** Removes a subscription: nothing more is sent to it, its waiting events included. Audited. */
export async function removeSubscription(stores: Stores, actor: Actor, input: { study: string; id: number }): Promise<void> {
  const { study, subscription } = await requireSubscription(stores, actor, input);
  await stores.webhooks.setState(subscription.id, 'removed');
  await stores.audit.append([auditEntry(actor, study.id, { action: 'webhook.removed', details: { subscription_id: subscription.id, url: subscription.url } })]);
}

/** Re-enables a failing subscription: its waiting events are sent again, in order, from the one that failed. Audited. */
export async function enableSubscription(stores: Stores, actor: Actor, input: { study: string; id: number }): Promise<WebhookSubscriptionRow> {
  const { study, subscription } = await requireSubscription(stores, actor, input);
  if (subscription.state !== 'active') {
    await stores.webhooks.setState(subscription.id, 'active');
    await stores.audit.append([auditEntry(actor, study.id, { action: 'webhook.enabled', details: { subscription_id: subscription.id, url: subscription.url } })]);
  }
  return { ...subscription, state: 'active' };
}

/** The delivery log: the latest deliveries, newest first, of one subscription or of the whole study. */
export async function listDeliveries(
  stores: Stores,
  actor: Actor,
  input: { study: string; id?: number; limit?: number },
): Promise<WebhookDeliveryRow[]> {
  const study = await requireStudy(stores.studies, input.study);
  await requireManager(stores, actor, study);
  if (input.id !== undefined && !(await stores.webhooks.findSubscription(study.id, input.id))) throw new DomainError('webhook_not_found', { id: input.id });
  return stores.webhooks.deliveries(study.id, input.id, Math.min(input.limit ?? 50, MAX_DELIVERIES_SHOWN));
}
