import type { Knex } from 'knex';
import { findKeysForRequests, type KeyForRequest } from './apiKeys.js';

/**
 * Statements of the security step one service process runs at a time; more requests wait for the next.
 * One: since the statement takes about a millisecond, a second one in flight mostly halved the batches
 * and doubled the statements (and their commits) for the same requests. With 50 keys at once it cost
 * the database 0.06-0.10 ms of CPU per request against 0.05 ms with one (bench/README.md).
 */
const STATEMENTS_IN_FLIGHT = 1;
/** Requests one statement serves at most. */
const BATCH_MOST = 200;

export interface KeyLookup {
  /** The request's key, study and counted rate window, as findKeysForRequests answers; undefined for an unknown fingerprint. */
  find(fingerprint: Buffer, at: Date): Promise<KeyForRequest | undefined>;
}

interface Waiting {
  fingerprint: Buffer;
  at: Date;
  resolve(found: KeyForRequest | undefined): void;
  reject(error: unknown): void;
}

/**
 * The security step's key look-ups of one service process, gathered into batches. A statement is sent
 * once the current turn of the event loop has read what came in (setImmediate), so the requests that
 * arrived together go together; an idle service adds no wait beyond that turn. While a statement runs,
 * the requests that arrive wait for the next one. Each request is still judged by a statement that
 * started after it arrived, so a revocation committed before a request reached the service refuses it,
 * and counted one by one in its key's shared window. On this machine a database round trip costs far
 * more than the SQL it runs (bench/README.md): at 50 requests in flight one statement serves 25 to 30.
 * Sent at once instead, the first request of a turn went alone and the rest waited behind it: 23-24
 * requests a statement, and 7-14 % fewer design calls a second with 50 keys.
 */
export function createKeyLookup(knex: Knex): KeyLookup {
  const waiting: Waiting[] = [];
  let inFlight = 0;

  async function send(): Promise<void> {
    const batch = waiting.splice(0, BATCH_MOST);
    inFlight++;
    try {
      const found = await findKeysForRequests(knex, batch);
      batch.forEach((request, i) => request.resolve(found[i]));
    } catch (error) {
      for (const request of batch) request.reject(error);
    } finally {
      inFlight--;
      sendSoon();
    }
  }

  let sendScheduled = false;
  /** Sends the waiting requests after this turn's input, unless a statement runs: its end sends them. */
  function sendSoon(): void {
    if (sendScheduled || waiting.length === 0 || inFlight >= STATEMENTS_IN_FLIGHT) return;
    sendScheduled = true;
    setImmediate(() => {
      sendScheduled = false;
      void send();
    });
  }

  return {
    find(fingerprint, at) {
      return new Promise((resolve, reject) => {
        waiting.push({ fingerprint, at, resolve, reject });
        sendSoon();
      });
    },
  };
}
