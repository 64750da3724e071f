import type { Knex } from 'knex';
import type { WebhookEventData, WithheldReason } from '../domain/stores.js';
import type { WebhookEventType } from '../domain/webhooks/webhookEvents.js';
import { DELIVERIES, EVENTS, eventSiteIdSql, SUBSCRIPTION_REACH_SQL, SUBSCRIPTIONS, withheldReasonSql } from './webhooks.js';

/** A subscription whose next event is due, claimed by this worker's transaction. */
export interface ClaimedSubscription {
  id: number;
  url: string;
  secret: string;
  /** Its undelivered events in event order that it may still receive. */
  pending: PendingDelivery[];
  /** How many of its waiting events this claim withheld: the subscription may no longer receive them. */
  withheld: number;
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
  type: WebhookEventType; data: WebhookEventData; created_at: Date; withheld_reason: WithheldReason | null;
}

/**
 * Claims up to `limit` active subscriptions whose first waiting event is due, with up to `perSubscription`
 * of their waiting events in order. Each of these is judged again by the rule that chose its receivers when it was
 * written (withheldReasonSql), from the subscription creator's role as it is now: one the subscription may no
 * longer receive is withheld, here, in the claiming transaction, and left out of `pending`, so it is never sent
 * and the events after it go on. The subscription row lock (FOR NO KEY UPDATE, which writers'
 * foreign-key checks do not wait for) is held to the end of the transaction: a subscription is served by
 * one worker at a time across every process, which is what keeps its events in order, and SKIP LOCKED
 * lets the other workers take the other subscriptions. A process that dies drops its connection, and
 * with it the lock: nothing it was sending stays claimed.
 */
export async function claimDueSubscriptions(trx: Knex.Transaction, now: Date, limit: number, perSubscription: number): Promise<ClaimedSubscription[]> {
  const claimed = await trx(`${SUBSCRIPTIONS} as s`)
    .where('s.state', 'active')
    .whereRaw(`(select d.next_attempt_at from ${DELIVERIES} d where d.subscription_id = s.id and d.delivered_at is null and d.withheld_at is null
      order by d.event_id limit 1) <= ?`, [now])
    .orderBy('s.id').limit(limit).forNoKeyUpdate().skipLocked()
    .select<{ id: number; url: string; secret: string }[]>('s.id', 's.url', 's.secret');
  if (claimed.length === 0) return [];
  const { rows } = await trx.raw<{ rows: PendingDeliveryRecord[] }>(`
    with waiting as (
      select p.*, ${withheldReasonSql('r', 'p')} as withheld_reason
      from unnest(?::int[]) as sid(id) join (${SUBSCRIPTION_REACH_SQL}) r on r.id = sid.id
      cross join lateral (
        select d.id, d.subscription_id, d.event_id, d.attempts, d.first_failed_at, d.next_attempt_at, e.type, e.data, e.created_at,
          e.unblinded_only, ${eventSiteIdSql('e')} as site_id
        from ${DELIVERIES} d join ${EVENTS} e on e.id = d.event_id
        where d.subscription_id = sid.id and d.delivered_at is null and d.withheld_at is null
        order by d.event_id limit ?
      ) p
    ), withheld as (
      update ${DELIVERIES} d set withheld_at = ?, withheld_reason = w.withheld_reason
      from waiting w where d.id = w.id and w.withheld_reason is not null
    )
    select id, subscription_id, event_id, attempts, first_failed_at, next_attempt_at, type, data, created_at, withheld_reason
    from waiting order by subscription_id, event_id`, [claimed.map((c) => c.id), perSubscription, now]);
  return claimed.map((c) => {
    const own = rows.filter((r) => r.subscription_id === c.id);
    return {
      ...c,
      pending: own.filter((r) => r.withheld_reason === null).map((r) => ({
        id: r.id, eventId: r.event_id, type: r.type, data: r.data, createdAt: r.created_at, attempts: r.attempts,
        firstFailedAt: r.first_failed_at, nextAttemptAt: r.next_attempt_at,
      })),
      withheld: own.filter((r) => r.withheld_reason !== null).length,
    };
  });
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
