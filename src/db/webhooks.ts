import type { Knex } from 'knex';
import type { WebhookDeliveryRow, WebhookState, WebhookStore, WebhookSubscriptionRow, WithheldReason } from '../domain/stores.js';
import type { WebhookEventType } from '../domain/webhooks/webhookEvents.js';
import { jsonParameter } from './jsonParameter.js';
import { roleSiteIdsSql } from './people.js';
import { returnedRow } from './returnedRow.js';

export const SUBSCRIPTIONS = 'webhook_subscriptions';
export const EVENTS = 'webhook_events';
export const DELIVERIES = 'webhook_deliveries';

/** The channel a committed delivery is announced on (LISTEN/NOTIFY), so a worker sends it at once rather than at its next poll. */
export const WEBHOOK_CHANNEL = 'sdx_webhook_deliveries';

interface SubscriptionRecord {
  id: number; study_id: number; url: string; event_types: WebhookEventType[]; unblinded: boolean; state: WebhookState;
  created_by: number | null; created_at: Date; state_changed_at: Date;
}
interface DeliveryRecord {
  id: number; subscription_id: number; event_id: number; type: WebhookEventType; created_at: Date; attempts: number;
  last_attempt_at: Date | null; next_attempt_at: Date; delivered_at: Date | null; last_status: number | null; last_error: string | null;
  withheld_at: Date | null; withheld_reason: WithheldReason | null;
}

function rowToSubscription(r: SubscriptionRecord): WebhookSubscriptionRow {
  return {
    id: r.id, studyId: r.study_id, url: r.url, eventTypes: r.event_types, unblinded: r.unblinded, state: r.state,
    createdBy: r.created_by, createdAt: r.created_at, stateChangedAt: r.state_changed_at,
  };
}

function rowToDelivery(r: DeliveryRecord): WebhookDeliveryRow {
  return {
    id: r.id, state: r.delivered_at ? 'delivered' : r.withheld_at ? 'withheld' : 'pending',
    subscriptionId: r.subscription_id, eventId: r.event_id, eventType: r.type, createdAt: r.created_at, attempts: r.attempts,
    lastAttemptAt: r.last_attempt_at, nextAttemptAt: r.next_attempt_at, deliveredAt: r.delivered_at, lastStatus: r.last_status, lastError: r.last_error,
    withheldAt: r.withheld_at, withheldReason: r.withheld_reason,
  };
}

/**
 * What each webhook subscription may receive, from its creator's role as it is when the statement runs (as a key's
 * maker is checked at every request), as SQL selecting one row per subscription: `id`, `study_id`, `state`,
 * `event_types`; `manages`, whether its creator still manages the study; `every_site`, or else `site_ids`, the sites
 * the creator's manager role covers; `unblinded`, whether it may receive events about the unblinded team's forms (made
 * unblinded, and its creator still is). The operator's subscriptions have no creator: every site, and the blinding
 * the operator chose. Read through `withheldReasonSql`.
 */
export const SUBSCRIPTION_REACH_SQL = `
  select s.id, s.study_id, s.state, s.event_types, s.created_by is null or m.id is not null as manages,
    s.created_by is null or coalesce(m.all_sites, false) as every_site, ${roleSiteIdsSql('m')} as site_ids,
    s.unblinded and (s.created_by is null or coalesce(m.unblinded, false)) as unblinded
  from ${SUBSCRIPTIONS} s
  left join study_roles m on m.study_id = s.study_id and m.user_id = s.created_by and m.role = 'manager'`;

/** The id of the site the event row `event` (with `study_id` and `data`) names, as SQL: null when it names none. */
export function eventSiteIdSql(event: string): string {
  return `(select site.id from sites site where site.study_id = ${event}.study_id and site.number = ${event}.data->>'site')`;
}

/**
 * The one rule of who may receive an event, applied when it is written (publish) and again when it is sent (the
 * delivery worker): SQL that is null when the subscription `reach` (a row of SUBSCRIPTION_REACH_SQL) may receive the
 * event `event` (a row with `site_id`, see eventSiteIdSql, and `unblinded_only`), else why not. A creator who no longer
 * manages the study gets nothing; one whose role covers some sites gets the events of those sites, and an event that
 * names no site (none does today) only when the role covers every site; an event about a form hidden from blinded
 * people needs an unblinded subscription.
 */
export function withheldReasonSql(reach: string, event: string): string {
  return `case when not ${reach}.manages then 'creator_not_manager'
    when not (${reach}.every_site or coalesce(${event}.site_id = any(${reach}.site_ids), false)) then 'site_not_covered'
    when ${event}.unblinded_only and not ${reach}.unblinded then 'creator_blinded' end`;
}

export function webhookStore(db: Knex): WebhookStore {
  return {
    async publish(events) {
      if (events.length === 0) return;
      // One statement: the events some subscription wants (in the order given, so their ids follow it), a delivery
      // row per subscription that wants each, and a notification that PostgreSQL sends only if the transaction commits.
      // Who wants an event is decided here, in the writing transaction, by withheldReasonSql.
      await db.raw(`
        with given as (
          select v.ord, v.study_id, v.type, v.data, v.unblinded_only, ${eventSiteIdSql('v')} as site_id
          from jsonb_to_recordset(?::jsonb) as v(ord int, study_id int, type text, data jsonb, unblinded_only boolean)
        ), receivers as (
          select r.* from (${SUBSCRIPTION_REACH_SQL}) r where r.study_id in (select study_id from given) and r.state <> 'removed'
        ), wanted as (
          select g.ord, g.study_id, g.type, g.data, g.unblinded_only, array_agg(r.id order by r.id) as subscription_ids
          from given g join receivers r on r.study_id = g.study_id and g.type = any(r.event_types) and ${withheldReasonSql('r', 'g')} is null
          group by g.ord, g.study_id, g.type, g.data, g.unblinded_only
        ), numbered as (
          select w.subscription_ids, w.study_id, w.type, w.data, w.unblinded_only, nextval(pg_get_serial_sequence('${EVENTS}', 'id')) as id
          from (select * from wanted order by ord) w
        ), events as (
          insert into ${EVENTS} (id, study_id, type, data, unblinded_only) select id, study_id, type, data, unblinded_only from numbered
        ), deliveries as (
          insert into ${DELIVERIES} (subscription_id, event_id)
          select unnest(n.subscription_ids), n.id from numbered n
          returning 1
        )
        select pg_notify('${WEBHOOK_CHANNEL}', '') from (select 1 from deliveries limit 1) d`,
      [jsonParameter(events.map((e, ord) => ({ ord, study_id: e.studyId, type: e.type, data: e.data, unblinded_only: e.unblindedOnly })))]);
    },
    async insertSubscription(row) {
      return rowToSubscription(returnedRow(await db(SUBSCRIPTIONS).insert({
        study_id: row.studyId, url: row.url, event_types: row.eventTypes, secret: row.secret, unblinded: row.unblinded, created_by: row.createdBy,
      }).returning<SubscriptionRecord[]>('*')));
    },
    async subscriptions(studyId) {
      const rows = await db(SUBSCRIPTIONS).where({ study_id: studyId }).whereNot({ state: 'removed' }).orderBy('id').select<SubscriptionRecord[]>();
      return rows.map(rowToSubscription);
    },
    async findSubscription(studyId, id) {
      const row = await db(SUBSCRIPTIONS).where({ study_id: studyId, id }).whereNot({ state: 'removed' }).first<SubscriptionRecord | undefined>();
      return row ? rowToSubscription(row) : undefined;
    },
    async setState(id, state) {
      await db(SUBSCRIPTIONS).where({ id }).update({ state, state_changed_at: db.fn.now() });
      if (state !== 'active') return;
      // Re-enabled: the event that failed is tried again now, with a fresh 24 hours of retries.
      await db(DELIVERIES).where({ subscription_id: id }).whereNull('delivered_at').whereNull('withheld_at').update({ next_attempt_at: db.fn.now(), first_failed_at: null });
      await db.raw(`select pg_notify('${WEBHOOK_CHANNEL}', '')`);
    },
    async deliveries(studyId, subscriptionId, limit) {
      const rows = await db(`${DELIVERIES} as d`).join(`${EVENTS} as e`, 'e.id', 'd.event_id').join(`${SUBSCRIPTIONS} as s`, 's.id', 'd.subscription_id')
        .where('s.study_id', studyId).modify((q) => { if (subscriptionId !== undefined) q.where('d.subscription_id', subscriptionId); })
        .orderBy('d.event_id', 'desc').orderBy('d.subscription_id').limit(limit)
        .select<DeliveryRecord[]>('d.*', 'e.type', 'e.created_at');
      return rows.map(rowToDelivery);
    },
  };
}
