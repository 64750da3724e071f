import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import { requireUser } from '../people/users.js';
import type { ApiKeyStore, AuditStore, PeopleStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';

/** Revokes a key at once (its next request gets 401); only a manager of the study may. Audited. */
export async function revokeApiKey(
  stores: { studies: StudyStore; people: PeopleStore; apiKeys: ApiKeyStore; audit: AuditStore },
  input: { study: string; keyId: number; by: string; via: 'portal' | 'cli' },
): Promise<void> {
  const study = await requireStudy(stores.studies, input.study);
  const person = await requireUser(stores.people, input.by);
  const isManager = (await stores.people.roles(study.id, person.id)).some((r) => r.role === 'manager');
  if (!isManager) throw new DomainError('not_a_manager', { email: person.email, study: study.code });
  const key = await stores.apiKeys.findById(study.id, input.keyId);
  if (!key) throw new DomainError('key_not_found', { id: input.keyId });
  if (key.revokedAt) throw new DomainError('key_already_revoked', { id: input.keyId });
  await stores.apiKeys.revoke(key.id, person.id);
  const actor: Actor = { kind: 'user', userId: person.id, name: person.name, via: input.via };
  await stores.audit.append([auditEntry(actor, study.id, { action: 'api_key.revoked', details: { key_id: key.id, name: key.name } })]);
}
