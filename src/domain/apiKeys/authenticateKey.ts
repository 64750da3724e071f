import { DomainError } from '../errors.js';
import type { ApiKeyStore, ApiKeyWithMaker } from '../stores.js';
import type { KeyContext } from './keyContext.js';
import { fingerprintOf, isWellFormedKey, sameFingerprint } from './keyValue.js';
import { keyStateOf } from './keyState.js';

/**
 * The fingerprint of a bearer value, or its refusal: key_missing, key_malformed (format or checksum,
 * decided without a database look-up).
 */
export function fingerprintOfBearer(bearer: string | undefined): Buffer {
  if (!bearer) throw new DomainError('key_missing');
  if (!isWellFormedKey(bearer)) throw new DomainError('key_malformed');
  return fingerprintOf(bearer);
}

/**
 * What a key found by its fingerprint may do at `now`, or why it does not work: key_unknown,
 * key_revoked, key_expired, key_stopped (maker no longer manager, or a read key's maker lost the
 * export right). The one place that turns a key's state into the request's refusal.
 */
export function workingKey(key: ApiKeyWithMaker | undefined, fingerprint: Buffer, now: Date): KeyContext {
  if (!key || !sameFingerprint(key.fingerprint, fingerprint)) throw new DomainError('key_unknown');
  const state = keyStateOf(key, now);
  if (state.state === 'revoked') throw new DomainError('key_revoked');
  if (state.state === 'expired') throw new DomainError('key_expired');
  if (state.state === 'stopped') throw new DomainError('key_stopped', { variant: state.why });
  return {
    keyId: key.id,
    keyName: key.name,
    studyId: key.studyId,
    studyCode: key.studyCode,
    canRead: key.canRead,
    canWrite: key.canWrite,
    canEnrol: key.canEnrol,
    siteIds: key.siteIds.filter((id) => key.makerSiteIds.includes(id)),
    makerId: key.createdBy,
    makerName: key.makerName,
    makerUnblinded: key.makerUnblinded,
  };
}

/** Resolves the bearer value of a request to what the key may do, checking its state on every request. */
export async function authenticateKey(apiKeys: Pick<ApiKeyStore, 'findByFingerprint'>, bearer: string | undefined, now = new Date()): Promise<KeyContext> {
  const fingerprint = fingerprintOfBearer(bearer);
  return workingKey(await apiKeys.findByFingerprint(fingerprint), fingerprint, now);
}
