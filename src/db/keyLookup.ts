import DataLoader from 'dataloader';
import type { Knex } from 'knex';
import type { CountReceipt, KeyGate } from '../domain/apiKeys/admission.js';
import { findKeysForRequests, findKeysWithStudies, type KeyRequestAt } from './apiKeys.js';
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

/**
 * A statement over a batch of requests, gathered per service process by DataLoader (no caching: every
 * request is looked up and counted). A batch is sent once the current turn of the event loop has read what
 * came in (setImmediate), so the requests that arrived together go together; an idle service adds no wait
 * beyond that turn. While `inFlightMost` statements run, the batch stays open and the requests that arrive
 * join it, up to BATCH_MOST; it is sent when a statement ends. Each request is still judged by a statement
 * that started after it arrived, so a revocation committed before a request reached the service refuses it.
 * On this machine a database round trip costs far more than the SQL it runs (bench/README.md).
 */
function batched<I, O>(inFlightMost: number, run: (items: readonly I[]) => Promise<O[]>): (item: I) => Promise<O> {
  let inFlight = 0;
  const waitingBatches: (() => void)[] = [];

  function sendWhenFree(send: () => void): void {
    if (inFlight < inFlightMost) {
      inFlight++;
      send();
    } else {
      waitingBatches.push(send);
    }
  }

  const loader = new DataLoader<I, O>(async (items) => {
    try {
      return await run(items);
    } finally {
      inFlight--;
      const next = waitingBatches.shift();
      if (next) sendWhenFree(next);
    }
  }, { cache: false, maxBatchSize: BATCH_MOST, batchScheduleFn: (send) => setImmediate(() => sendWhenFree(send)) });
  return (item) => loader.load(item);
}

export type KeyLookup = KeyGate;

/**
 * The request path's key look-ups with their counts (at `ratePerMinute` a key), the look-ups again of requests
 * whose bodies have arrived, and the rare counts taken back, of one service process, each gathered into batches.
 */
export function createKeyLookup(knex: Knex, ratePerMinute: number): KeyLookup {
  const find = batched(FINDING_IN_FLIGHT, (requests: readonly KeyRequestAt[]) => findKeysForRequests(knex, requests, ratePerMinute));
  const takeBack = batched(TAKE_BACKS_IN_FLIGHT, async (receipts: readonly CountReceipt[]) => {
    await takeBackCounts(knex, receipts);
    return receipts.map(() => undefined);
  });
  // The look-ups again of requests whose bodies have arrived, in batches of their own: they count nothing.
  const findAgain = batched(FINDING_IN_FLIGHT, (fingerprints: readonly Buffer[]) => findKeysWithStudies(knex, fingerprints));
  return { findAndCount: (fingerprint, at) => find({ fingerprint, at }), find: findAgain, takeBack };
}
