import type { KeyForRequest } from '../db/apiKeys.js';
import { fingerprintOf, isWellFormedKey, sameFingerprint } from '../domain/apiKeys/keyValue.js';
import type { Services } from './requestState.js';

/** `Authorization: Bearer <value>`; anything else present is a malformed key. */
export function bearerOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  // "Bearer" with no value after it (clients send it when their key variable is empty) is a missing key.
  if (!value?.trim() || /^Bearer$/i.test(value.trim())) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value.trim());
  return match ? match[1] : value;
}

/** A key's look-up under way: the fingerprint it asks about, the instant it judges the key at, and its answer to come. */
interface KeyLookupUnderWay {
  fingerprint: Buffer;
  at: Date;
  found: Promise<KeyForRequest | undefined>;
}

const underWay = new WeakMap<object, KeyLookupUnderWay>();

/**
 * Sends the request's key look-up (src/db/keyLookup.ts) as soon as its headers are in, for a request whose
 * body is still to be read: the statement then runs while the body arrives and is parsed (for a 4 MB FHIR
 * file about 15 ms), rather than after it (about 3.5 ms on the call's path). The look-up also counts the
 * request, so a request with a working key whose body is then refused (not JSON, not UTF-8, past 5 MB as
 * it arrives) counts too, as the interface description says of every refused request but 401; app.ts
 * calls this only once the headers themselves passed (415, and 413 for a declared length, come first).
 * A value that is not a well-formed key is not looked up: the security step refuses it with no database
 * look-up at all.
 */
export function startKeyLookup(request: object, services: Pick<Services, 'keyLookup'>, authorization: string | string[] | undefined): void {
  const bearer = bearerOf(authorization);
  if (!bearer || !isWellFormedKey(bearer)) return;
  const at = new Date();
  const fingerprint = fingerprintOf(bearer);
  const found = services.keyLookup.find(fingerprint, at);
  // Awaited by the security step, unless the body is refused first; a failure then has no one to tell.
  found.catch(() => undefined);
  underWay.set(request, { fingerprint, at, found });
}

/**
 * Waits for the look-up started with the request's headers, if any, to be done (whatever its answer):
 * a request refused for its body is answered once it is counted, so the count a client reads next
 * already holds it.
 */
export async function keyLookupDone(request: object): Promise<void> {
  await underWay.get(request)?.found.catch(() => undefined);
}

/**
 * The key look-up of the request: the one started with its headers when it asked about the same key,
 * else a new one judged at `now`. Also tells the instant the key is judged at.
 */
export function keyLookupOf(request: object, services: Pick<Services, 'keyLookup'>, now: Date): {
  at: Date;
  find(fingerprint: Buffer): Promise<KeyForRequest | undefined>;
} {
  const started = underWay.get(request);
  return {
    at: started?.at ?? now,
    find: (fingerprint) => (started && sameFingerprint(started.fingerprint, fingerprint) ? started.found : services.keyLookup.find(fingerprint, now)),
  };
}
