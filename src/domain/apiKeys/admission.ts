import { DomainError } from '../errors.js';
import type { ApiKeyWithMaker, Study } from '../stores.js';
import { fingerprintOfBearer, workingKey } from './authenticateKey.js';
import { checkKeyAccess, type KeyRight } from './keyAccess.js';
import type { KeyContext } from './keyContext.js';
import { rateDecision, type RateDecision, type RateWindow } from './rateWindow.js';

/**
 * What the store needs to take back the count of one request (KeyGate.takeBack): its key, the instant it
 * was counted at, whether it took a place in the key's minute, and the key's time of last use before and
 * after the count (as the store keeps them).
 */
export interface CountReceipt {
  readonly keyId: number;
  readonly at: number;
  readonly placed: boolean;
  readonly usedBefore: string | null;
  readonly usedAt: string;
}

/**
 * A key as the request path finds it by fingerprint, with its study (a key only ever reaches its own), and
 * the request counted in it.
 */
export interface FoundKey {
  key: ApiKeyWithMaker;
  study: Study;
  /** The request's place in its key's minute. */
  window: RateWindow;
  receipt: CountReceipt;
}

/** What the request path reads and writes about a request's key (src/db/keyLookup.ts implements it). */
export interface KeyGate {
  /** Finds the key of `fingerprint` and counts one request of it at `at` (rate window and usage counters), whatever the key's state. */
  findAndCount(fingerprint: Buffer, at: Date): Promise<FoundKey | undefined>;
  /** Finds the key of `fingerprint` with its study as they are now, counting nothing. */
  find(fingerprint: Buffer): Promise<Pick<FoundKey, 'key' | 'study'> | undefined>;
  /** Takes back a request's count, entirely: counter, time of last use, place in the minute. */
  takeBack(receipt: CountReceipt): Promise<void>;
}

/** A request made with a working key, counted. */
export interface KeyRequest {
  key: KeyContext;
  study: Study;
  /** The request's place in its key's minute. */
  window: RateWindow;
  /** What takes the request's count back, should the key stop working before the request is answered. */
  receipt: CountReceipt;
}

/**
 * Authenticates a request's bearer value at `at`, counting it. Only a key that works is counted: a
 * request refused with 401 never is (spec, "Rate limit"). The store counts every request whose key it
 * finds, with the look-up, since a round trip costs more than the count (bench/README.md); the count of a
 * request this then refuses is taken back before the refusal is answered. The key's state is decided
 * here alone (workingKey), never in the store.
 *
 * @throws DomainError key_missing, key_malformed, key_unknown, key_revoked, key_expired, key_stopped
 */
export async function authenticateRequest(gate: KeyGate, bearer: string | undefined, at: Date): Promise<KeyRequest> {
  const fingerprint = fingerprintOfBearer(bearer);
  const found = await gate.findAndCount(fingerprint, at);
  try {
    return { key: workingKey(found?.key, fingerprint, at), study: found!.study, window: found!.window, receipt: found!.receipt };
  } catch (error) {
    if (found) await gate.takeBack(found.receipt);
    throw error;
  }
}

/**
 * The counted request again, with its key and study as they are at `at`: what a request with a body is
 * decided on once the body has arrived. Its key was authenticated from the headers, before a byte of the
 * body was read, and a body may take up to the body deadline (60 seconds) to arrive; meanwhile the key may
 * have been revoked, expired or stopped, its maker may have lost a site or been blinded, and the study may
 * have been locked or its API switched off. The request keeps its count and its place in the minute; a key
 * that no longer works is refused with its 401 and the count taken back, as for a key refused at once.
 *
 * @throws DomainError key_unknown, key_revoked, key_expired, key_stopped
 */
export async function recheckRequest(gate: KeyGate, bearer: string | undefined, at: Date, counted: KeyRequest): Promise<KeyRequest> {
  const fingerprint = fingerprintOfBearer(bearer);
  const found = await gate.find(fingerprint);
  try {
    return { ...counted, key: workingKey(found?.key, fingerprint, at), study: found!.study };
  } catch (error) {
    await gate.takeBack(counted.receipt);
    throw error;
  }
}

/** Whether a counted request may make its call: the rate it used, and its study or its refusal. */
export type Admission = { rate: RateDecision } & ({ study: Study; refusal?: undefined } | { study?: undefined; refusal: DomainError });

/**
 * Decides whether a counted request may make a call on `studyCode` needing `right`: first the rate
 * (429), then the study (404, exactly as for a study that does not exist) and the right (403).
 */
export function admissionOf(request: Pick<KeyRequest, 'key' | 'study' | 'window'>, call: { studyCode: string; right: KeyRight }, perMinute: number, now = Date.now()): Admission {
  const rate = rateDecision(request.window, perMinute, now);
  if (!rate.allowed) return { rate, refusal: new DomainError('rate_limited', { limit: rate.limit, retry_after: rate.resetSeconds }) };
  try {
    return { rate, study: checkKeyAccess(request.key, call.studyCode, request.study.code === call.studyCode ? request.study : undefined, call.right) };
  } catch (error) {
    if (error instanceof DomainError) return { rate, refusal: error };
    throw error;
  }
}
