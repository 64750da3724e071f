import { DomainError } from '../errors.js';
import type { ApiKeyStore } from '../stores.js';
import type { KeyContext } from './keyContext.js';
import { fingerprintOf, isWellFormedKey, sameFingerprint } from './keyValue.js';
import { keyStateOf } from './keyState.js';

/**
 * Resolves the bearer value of a request to what the key may do, checking its state on every
 * request. Refusals: key_missing, key_malformed (format or checksum: no database look-up),
 * key_unknown, key_revoked, key_expired, key_stopped (maker no longer manager, or a read key's
 * maker lost the export right).
 */
export async function authenticateKey(apiKeys: Pick<ApiKeyStore, 'findByFingerprint'>, bearer: string | undefined, now = new Date()): Promise<KeyContext> {
  if (!bearer) throw new DomainError('key_missing');
  if (!isWellFormedKey(bearer)) throw new DomainError('key_malformed');
  const fingerprint = fingerprintOf(bearer);
  const key = await apiKeys.findByFingerprint(fingerprint);
  if (!key || !sameFingerprint(key.fingerprint, fingerprint)) throw new DomainError('key_unknown');
  const state = keyStateOf(key, now);
  if (state.state === 'revoked') throw new DomainError('key_revoked');
  if (state.state === 'expired') throw new DomainError('key_expired');
  if (state.state === 'stopped') {
    throw new DomainError('key_stopped', { variant: state.why });
  }
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
