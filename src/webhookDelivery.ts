import type { Knex } from 'knex';
import type pg from 'pg';
import type { Config } from './config.js';
import { claimDueSubscriptions, markFailing, recordDelivered, recordFailure, type ClaimedSubscription, type PendingDelivery } from './db/webhookDeliveries.js';
import { WEBHOOK_CHANNEL } from './db/webhooks.js';
import { failureLogger } from './logs.js';
import { withTransaction } from './db/transaction.js';
import type { AddressPolicy } from './domain/webhooks/addressPolicy.js';
import { givesUp, retryDelayMs } from './domain/webhooks/retrySchedule.js';
import { sendWebhook } from './webhookSender.js';

/** Subscriptions one round serves at once, each on its own sequence of POSTs. */
const SUBSCRIPTIONS_PER_ROUND = 16;
/** Events of one subscription sent in one round, one after the other. */
const EVENTS_PER_ROUND = 50;
/**
 * No new POST starts once a round has run this long: the round's transaction holds its subscriptions'
 * locks and must end well inside PostgreSQL's idle-in-transaction timeout, however slow the receivers.
 */
const ROUND_MS = 20_000;
/** How long stopping waits for POSTs in flight: well inside the service's own shutdown bound. */
const STOP_WAIT_MS = 3_000;

/** The worker's lines go to the service's failure log (src/logs.ts), marked as its own. */
function log(level: 'warn' | 'error', message: string): void {
  failureLogger[level]({ source: 'webhooks', message });
}

/** Sends a subscription's due events in order, stopping at the first that fails (it is retried later, before any after it). */
async function serveSubscription(trx: Knex.Transaction, subscription: ClaimedSubscription, config: Config, policy: AddressPolicy, keepGoing: () => boolean): Promise<number> {
  const delivered: { delivery: PendingDelivery; status: number; at: Date }[] = [];
  let sent = 0;
  for (const delivery of subscription.pending) {
    const now = new Date();
    if (delivery.nextAttemptAt > now || !keepGoing()) break;
    const result = await sendWebhook(subscription, { eventId: delivery.eventId, type: delivery.type, createdAt: delivery.createdAt, data: delivery.data }, {
      policy, timeoutMs: config.webhookTimeoutSeconds * 1000,
    });
    const at = new Date();
    sent++;
    if (result.ok) {
      delivered.push({ delivery, status: result.status!, at });
      continue;
    }
    await recordFailure(trx, delivery, result, at, new Date(at.getTime() + retryDelayMs(delivery.attempts + 1)));
    if (givesUp(delivery.firstFailedAt ?? at, at)) {
      await markFailing(trx, subscription.id);
      log('error', `webhook subscription ${subscription.id} is failing: its event ${delivery.eventId} failed for 24 hours (${result.error})`);
    }
    break;
  }
  await recordDelivered(trx, delivered);
  return sent;
}

/**
 * One round: claims the due subscriptions and serves them side by side, in one transaction. Returns the attempts made
 * and the deliveries withheld: a round that only withheld events may have left others waiting behind them, so it counts as work.
 */
async function deliverRound(knex: Knex, config: Config, policy: AddressPolicy, stopping: () => boolean): Promise<number> {
  return withTransaction(knex, async (trx) => {
    const claimed = await claimDueSubscriptions(trx, new Date(), SUBSCRIPTIONS_PER_ROUND, EVENTS_PER_ROUND);
    const deadline = Date.now() + ROUND_MS;
    const keepGoing = () => !stopping() && Date.now() < deadline;
    const sent = await Promise.all(claimed.map((s) => serveSubscription(trx, s, config, policy, keepGoing)));
    return sent.reduce((a, b) => a + b, 0) + claimed.reduce((withheld, s) => withheld + s.withheld, 0);
  }, { attempts: 1 });
}

export interface WebhookDelivery {
  /**
   * Starts no new POST, and waits a little for those in flight to be answered and recorded. An attempt
   * not recorded by then is rolled back with the round, and sent again by another process or the next
   * start: at least once.
   */
  stop(): Promise<void>;
}

/**
 * The service process's webhook worker (issue 22.5): it sends the outbox's deliveries as soon as a
 * committed change announces them (LISTEN), and looks every `webhookPollMs` anyway for retries falling
 * due and for announcements missed while its listening connection was down. Every process of the service
 * runs one; they share the outbox through the subscriptions' row locks.
 */
/** The two calls of knex's connection pool used to hold a LISTEN connection; knex types its client as any. */
interface ConnectionPool {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

export function startWebhookDelivery(config: Config, knex: Knex): WebhookDelivery {
  const pool = knex.client as ConnectionPool;
  const policy: AddressPolicy = { allowInsecure: config.webhooksAllowInsecure };
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  let listener: pg.Client | undefined;
  // While the database is away every poll fails the same way: it is said once, and again after a recovery;
  // a warning, as knex's own, since the events wait safely in the outbox and nothing is lost.
  let failing = false;
  const failed = (message: string) => {
    if (!failing) log('warn', message);
    failing = true;
  };

  const drain = async () => {
    do {
      again = false;
      // Rounds follow each other while there is work; a failing database is tried again at the next poll.
      while (!stopped && (await deliverRound(knex, config, policy, () => stopped).then((sent) => { failing = false; return sent; }, (error: Error) => { failed(error.message); return 0; })) > 0) {
        // the next round
      }
    } while (again && !stopped);
  };
  const wake = () => {
    if (stopped) return;
    if (running) { again = true; return; }
    running = drain().finally(() => { running = undefined; });
  };

  let listening: Promise<void> | undefined;
  const listen = () => {
    listening ??= listenOnce().finally(() => { listening = undefined; });
    return listening;
  };
  const listenOnce = async () => {
    if (listener || stopped) return;
    try {
      const connection = await pool.acquireConnection();
      // Stopped while the connection was on its way: hand it straight back, or the pool's end would wait for it.
      if (stopped) {
        await pool.releaseConnection(connection);
        return;
      }
      listener = connection;
      const lost = () => {
        if (listener !== connection) return;
        listener = undefined;
        void pool.releaseConnection(connection).catch(() => undefined);
      };
      connection.on('notification', wake);
      connection.on('error', lost);
      connection.once('end', lost);
      await connection.query(`listen ${WEBHOOK_CHANNEL}`);
    } catch (error) {
      failed(`webhooks: cannot listen for new deliveries (${(error as Error).message}); polling every ${config.webhookPollMs} ms`);
    }
  };

  const poll = setInterval(() => {
    void listen();
    wake();
  }, config.webhookPollMs);
  poll.unref();
  void listen().then(wake);

  return {
    async stop() {
      stopped = true;
      clearInterval(poll);
      await Promise.race([Promise.all([running, listening]), new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())]);
      const connection = listener;
      listener = undefined;
      if (connection) {
        connection.removeAllListeners('notification');
        await connection.query(`unlisten ${WEBHOOK_CHANNEL}`).catch(() => undefined);
        await pool.releaseConnection(connection).catch(() => undefined);
      }
    },
  };
}
