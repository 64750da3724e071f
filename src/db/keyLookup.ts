import type { Knex } from 'knex';
import type { CountReceipt, KeyGate } from '../domain/apiKeys/admission.js';
import { findKeysForRequests, type KeyRequestAt } from './apiKeys.js';
import { takeBackCounts } from './rateLimits.js';

/**
 * Finding statements (each finds and counts) one service process runs at a time; more requests wait for
 * the next. Two: the look-up and the count were two statements of their own, one of each in flight, and
 * their one statement with a single one in flight lost a sixth to a third of the design call's throughput
 * on a busy machine, where two overlapping statements use both cores (bench/README.md).
 */
const FINDING_IN_FLIGHT = 2;
/**
 * Take-backs run one at a time, in the order their counts were made: a key's time of last use goes back
 * through the counts of one take-back only (takeBackCounts).
 */
const TAKE_BACKS_IN_FLIGHT = 1;
/** Requests one statement serves at most. */
const BATCH_MOST = 200;

interface Waiting<I, O> {
  item: I;
  resolve(answer: O): void;
  reject(error: unknown): void;
}

/**
 * A statement over a batch of requests, gathered per service process. It is sent once the current
 * turn of the event loop has read what came in (setImmediate), so the requests that arrived together
 * go together; an idle service adds no wait beyond that turn. While `inFlightMost` statements run, the requests that
 * arrive wait for the next one. Each request is still judged by a statement that started after it
 * arrived, so a revocation committed before a request reached the service refuses it. On this machine
 * a database round trip costs far more than the SQL it runs (bench/README.md).
 */
function batched<I, O>(inFlightMost: number, run: (items: I[]) => Promise<O[]>): (item: I) => Promise<O> {
  const waiting: Waiting<I, O>[] = [];
  let inFlight = 0;
  let sendScheduled = false;

  async function send(): Promise<void> {
    const batch = waiting.splice(0, BATCH_MOST);
    inFlight++;
    try {
      const answers = await run(batch.map((w) => w.item));
      batch.forEach((w, i) => {
        const answer = answers[i];
        // `run` answers every item, in order: an answer missing is its bug, and that request fails rather than hangs.
        if (answer === undefined) w.reject(new Error('a batched statement gave no answer for a request'));
        else w.resolve(answer);
      });
    } catch (error) {
      for (const w of batch) w.reject(error);
    } finally {
      inFlight--;
      sendSoon();
    }
  }

  /** Sends the waiting requests after this turn's input, unless a statement runs: its end sends them. */
  function sendSoon(): void {
    if (sendScheduled || waiting.length === 0 || inFlight >= inFlightMost) return;
    sendScheduled = true;
    setImmediate(() => {
      sendScheduled = false;
      void send();
    });
  }

  return (item) => new Promise((resolve, reject) => {
    waiting.push({ item, resolve, reject });
    sendSoon();
  });
}

export type KeyLookup = KeyGate;

/** The request path's key look-ups with their counts (at `ratePerMinute` a key), and the rare counts taken back, of one service process, each gathered into batches. */
export function createKeyLookup(knex: Knex, ratePerMinute: number): KeyLookup {
  const find = batched(FINDING_IN_FLIGHT, (requests: KeyRequestAt[]) => findKeysForRequests(knex, requests, ratePerMinute));
  const takeBack = batched(TAKE_BACKS_IN_FLIGHT, async (receipts: CountReceipt[]) => {
    await takeBackCounts(knex, receipts);
    return receipts.map(() => undefined);
  });
  return { findAndCount: (fingerprint, at) => find({ fingerprint, at }), takeBack };
}
