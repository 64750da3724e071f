import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import { requireUser } from '../people/users.js';
import type { ApiKeyStore, AuditStore, PeopleStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';
import { fingerprintOf, generateKeyValue, hintOf } from './keyValue.js';

export const KEY_TERMS = [30, 90, 365] as const;

export interface NewApiKey {
  study: string;
  /** E-mail of the study manager who makes the key. */
  by: string;
  name: string;
  canRead: boolean;
  canWrite: boolean;
  canEnrol: boolean;
  /** Site numbers; left out, every site the manager may see. */
  sites?: string[];
  termDays: number;
  /** Where the manager made the key, as the audit trail records it; the command line when left out. */
  via?: 'portal' | 'cli';
}

const DAY_MS = 86_400_000;

/**
 * Makes an API key for a study manager (interface description, "API key"). The value is returned
 * here once and never stored: only its SHA-256 fingerprint is kept, so a lost key is replaced, not shown again.
 */
export async function createApiKey(
  stores: { studies: StudyStore; people: PeopleStore; apiKeys: ApiKeyStore; audit: AuditStore },
  input: NewApiKey,
  now = new Date(),
): Promise<{ id: number; key: string; expiresAt: Date; siteNumbers: string[] }> {
  const study = await requireStudy(stores.studies, input.study);
  const maker = await requireUser(stores.people, input.by);
  // Held to the commit: a role change under way that takes the manager role or the export right is waited for
  // and then refuses the key, and one that starts later waits for the key and then stops it (stopKeysOfMaker),
  // so no key escapes the stop that stays when the role or right comes back.
  const manager = (await stores.people.roles(study.id, maker.id, { forShare: true })).find((r) => r.role === 'manager');
  if (!manager) throw new DomainError('not_a_manager', { email: maker.email, study: study.code });
  const name = input.name.trim();
  if (name.length === 0 || name.length > 100) throw new DomainError('invalid_key_name');
  if (!input.canRead && !input.canWrite) throw new DomainError('key_rights_missing');
  // A read key exports study data, so only a manager who may export can make one.
  if (input.canRead && !manager.canExport) throw new DomainError('export_right_missing', { email: maker.email });
  if (!(KEY_TERMS as readonly number[]).includes(input.termDays)) throw new DomainError('invalid_key_term', { term: input.termDays });
  const studySites = await stores.studies.sites(study);
  const mine = studySites.filter((s) => manager.siteIds.includes(s.id));
  // A site named twice (`--sites 01,01`) is one site of the key, not a duplicate row.
  const chosen = input.sites === undefined ? mine : [...new Set(input.sites)].map((number) => {
    const site = mine.find((s) => s.number === number);
    if (!site) throw new DomainError('site_not_allowed', { site: number });
    return site;
  });
  if (chosen.length === 0) throw new DomainError('key_sites_missing');
  const key = generateKeyValue();
  const expiresAt = new Date(now.getTime() + input.termDays * DAY_MS);
  const row = await stores.apiKeys.insert({
    studyId: study.id,
    name,
    fingerprint: fingerprintOf(key),
    hint: hintOf(key),
    canRead: input.canRead,
    canWrite: input.canWrite,
    canEnrol: input.canEnrol,
    termDays: input.termDays,
    expiresAt,
    createdBy: maker.id,
    siteIds: chosen.map((s) => s.id),
  });
  const actor: Actor = { kind: 'user', userId: maker.id, name: maker.name, via: input.via ?? 'cli' };
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'api_key.created',
    details: {
      key_id: row.id, name, read: input.canRead, write: input.canWrite, enrol: input.canEnrol,
      sites: chosen.map((s) => s.number), term_days: input.termDays,
    },
  })]);
  return { id: row.id, key, expiresAt, siteNumbers: chosen.map((s) => s.number) };
}
