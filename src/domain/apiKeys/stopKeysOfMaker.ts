import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import type { ApiKeyStore, AuditStore } from '../stores.js';
import { keyStateOf } from './keyState.js';

/**
 * Keeps for good the stop of every key of a person in a study that their roles, as a role change has just
 * left them, stop (keyStateOf: no manager role, or a read key without the export right), in the role change's
 * transaction, with an audit row per key as a revocation has. Giving the role or the right back later
 * restarts none of them ("States and transitions: API key": stopped has no way out); the manager makes a new key.
 * Run after every role change; a key already revoked, expired or stopped is left as it is.
 */
export async function stopKeysOfMaker(
  stores: { apiKeys: ApiKeyStore; audit: AuditStore },
  actor: Actor,
  input: { studyId: number; userId: number },
  now = new Date(),
): Promise<void> {
  const keys = (await stores.apiKeys.list(input.studyId)).filter((key) => key.createdBy === input.userId && key.stoppedReason === null);
  for (const key of keys) {
    const state = keyStateOf(key, now);
    if (state.state !== 'stopped') continue;
    // Another role change stopping the same key at the same time writes its row; this one writes none.
    if (!(await stores.apiKeys.stop(key.id, state.why))) continue;
    await stores.audit.append([auditEntry(actor, input.studyId, { action: 'api_key.stopped', details: { key_id: key.id, name: key.name, why: state.why } })]);
  }
}
