import type { Knex } from 'knex';
import type { WebhookEventData } from '../domain/stores.js';
import type { WebhookEventType } from '../domain/webhooks/webhookEvents.js';
import { DELIVERIES, EVENTS, SUBSCRIPTIONS } from './webhooks.js';

/** A subscription whose next event is due, claimed by this worker's transaction. */
export interface ClaimedSubscription {
  id: number;
  url: string;
  secret: string;
  /** Its undelivered events in event order, the first of them due. */
  pending: PendingDelivery[];
}

export interface PendingDelivery {
  id: number;
  eventId: number;
  type: WebhookEventType;
  data: WebhookEventData;
  createdAt: Date;
  attempts: number;
  firstFailedAt: Date | null;
  nextAttemptAt: Date;
}

interface PendingDeliveryRecord {
  id: number; subscription_id: number; event_id: number; attempts: number; first_failed_at: Date | null; next_attempt_at: Date;
  type: WebhookEventType; data: WebhookEventData; created_at: Date;
}

/**
 * Claims up to `limit` active subscriptions whose first undelivered event is due, with up to `perSubscription`
 * of their undelivered events in order. The subscription row lock (FOR NO KEY UPDATE, which writers'
 * foreign-key checks do not wait for) is held to the end of the transaction: a subscription is served by
 * one worker at a time across every process, which is what keeps its events in order, and SKIP LOCKED
 * lets the other workers take the other subscriptions. A process that dies drops its connection, and
 * with it the lock: nothing it was sending stays claimed.
 */
export async function claimDueSubscriptions(trx: Knex.Transaction, now: Date, limit: number, perSubscription: number): Promise<ClaimedSubscription[]> {
  const claimed = await trx(`${SUBSCRIPTIONS} as s`)
    .where('s.state', 'active')
    .whereRaw(`(select d.next_attempt_at from ${DELIVERIES} d where d.subscription_id = s.id and d.delivered_at is null order by d.event_id limit 1) <= ?`, [now])
    .orderBy('s.id').limit(limit).forNoKeyUpdate().skipLocked()
    .select<{ id: number; url: string; secret: string }[]>('s.id', 's.url', 's.secret');
  if (claimed.length === 0) return [];
  const { rows } = await trx.raw<{ rows: PendingDeliveryRecord[] }>(`
    select p.* from unnest(?::int[]) as sid(id) cross join lateral (
      select d.id, d.subscription_id, d.event_id, d.attempts, d.first_failed_at, d.next_attempt_at, e.type, e.data, e.created_at
      from ${DELIVERIES} d join ${EVENTS} e on e.id = d.event_id
      where d.subscription_id = sid.id and d.delivered_at is null
      order by d.event_id limit ?
    ) p order by p.subscription_id, p.event_id`, [claimed.map((c) => c.id), perSubscription]);
  return claimed.map((c) => ({
    ...c,
    pending: rows.filter((r) => r.subscription_id === c.id).map((r) => ({
      id: r.id, eventId: r.event_id, type: r.type, data: r.data, createdAt: r.created_at, attempts: r.attempts,
      firstFailedAt: r.first_failed_at, nextAttemptAt: r.next_attempt_at,
    })),
  }));
}

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

/** Records deliveries that succeeded, in one statement: a subscription's run of them costs one round trip. */
export async function recordDelivered(trx: Knex.Transaction, delivered: { delivery: PendingDelivery; status: number; at: Date }[]): Promise<void> {
  if (delivered.length === 0) return;
  await trx.raw(`
    update ${DELIVERIES} d set attempts = d.attempts + 1, last_attempt_at = v.at, delivered_at = v.at, last_status = v.status, last_error = null
    from jsonb_to_recordset(?::jsonb) as v(id bigint, at timestamptz, status int)
    where d.id = v.id`, [JSON.stringify(delivered.map((d) => ({ id: d.delivery.id, at: d.at.toISOString(), status: d.status })))]);
}

/** Records a failed attempt, with when to try again. */
export async function recordFailure(
  trx: Knex.Transaction,
  delivery: PendingDelivery,
  result: AttemptResult,
  at: Date,
  nextAttemptAt: Date,
): Promise<void> {
  await trx(DELIVERIES).where({ id: delivery.id }).update({
    attempts: delivery.attempts + 1, last_attempt_at: at, last_status: result.status, last_error: result.error,
    first_failed_at: delivery.firstFailedAt ?? at, next_attempt_at: nextAttemptAt,
  });
}

/** Marks a subscription failing after a day of failed retries: nothing is sent to it until a manager re-enables it. */
export async function markFailing(trx: Knex.Transaction, subscriptionId: number): Promise<void> {
  await trx(SUBSCRIPTIONS).where({ id: subscriptionId, state: 'active' }).update({ state: 'failing', state_changed_at: trx.fn.now() });
}
