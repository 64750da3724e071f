import { DomainError } from '../errors.js';
import type { ApiKeyWithMaker, StudyRow } from '../stores.js';
import { fingerprintOfBearer, workingKey } from './authenticateKey.js';
import { checkKeyAccess, type KeyRight } from './keyAccess.js';
import type { KeyContext } from './keyContext.js';
import { rateDecision, type RateDecision, type RateWindow } from './rateWindow.js';

/** A key as the request path finds it by fingerprint, with its study (a key only ever reaches its own). */
export interface FoundKey {
  key: ApiKeyWithMaker;
  study: StudyRow;
}

/** What the request path reads and writes about a request's key (src/db/keyLookup.ts implements it). */
export interface KeyGate {
  find(fingerprint: Buffer): Promise<FoundKey | undefined>;
  /** Counts one request of a working key at `at`: in its rate window and its usage counters. */
  count(keyId: number, at: Date): Promise<RateWindow>;
}

/** A request made with a working key, and its count under way. */
export interface KeyRequest {
  key: KeyContext;
  study: StudyRow;
  /** The request's place in its key's minute, once counted. */
  window: Promise<RateWindow>;
}

/** A request made with a working key, counted. */
export type CountedRequest = Omit<KeyRequest, 'window'> & { window: RateWindow };

/**
 * Authenticates a request's bearer value at `at` and starts counting the request. Only a key that works
 * is counted: a request refused with 401 never is (spec, "Rate limit"). The count is not waited for here,
 * so that a body can be read while it runs; admissionOf needs it.
 *
 * @throws DomainError key_missing, key_malformed, key_unknown, key_revoked, key_expired, key_stopped
 */
export async function authenticateRequest(gate: KeyGate, bearer: string | undefined, at: Date): Promise<KeyRequest> {
  const fingerprint = fingerprintOfBearer(bearer);
  const found = await gate.find(fingerprint);
  const key = workingKey(found?.key, fingerprint, at);
  const window = gate.count(key.keyId, at);
  // Awaited by whoever decides the admission; a request refused first still leaves no rejection unhandled.
  window.catch(() => undefined);
  return { key, study: found!.study, window };
}

/** Whether a counted request may make its call: the rate it used, and its study or its refusal. */
export type Admission = { rate: RateDecision } & ({ study: StudyRow; refusal?: undefined } | { study?: undefined; refusal: DomainError });

/**
 * Decides whether a counted request may make a call on `studyCode` needing `right`: first the rate
 * (429), then the study (404, exactly as for a study that does not exist) and the right (403).
 */
export function admissionOf(request: CountedRequest, call: { studyCode: string; right: KeyRight }, perMinute: number, now = Date.now()): Admission {
  const rate = rateDecision(request.window, perMinute, now);
  if (!rate.allowed) return { rate, refusal: new DomainError('rate_limited', { limit: rate.limit, retry_after: rate.resetSeconds }) };
  try {
    return { rate, study: checkKeyAccess(request.key, call.studyCode, request.study.code === call.studyCode ? request.study : undefined, call.right) };
  } catch (error) {
    if (error instanceof DomainError) return { rate, refusal: error };
    throw error;
  }
}
