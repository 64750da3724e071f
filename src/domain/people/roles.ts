import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { DomainError } from '../errors.js';
import { stopKeysOfMaker } from '../apiKeys/stopKeysOfMaker.js';
import type { ApiKeyStore, AuditStore, PeopleStore, RoleName, Role, Study, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';
import { requireUser } from './users.js';

type Stores = { studies: StudyStore; people: PeopleStore; audit: AuditStore; apiKeys: ApiKeyStore };

/** Site numbers to site ids; an unknown number is refused. `undefined` means every site. */
async function siteIdsOf(studies: StudyStore, study: Study, numbers: string[] | undefined): Promise<number[] | undefined> {
  if (numbers === undefined) return undefined;
  const sites = await studies.sites(study);
  return numbers.map((number) => {
    const site = sites.find((s) => s.number === number);
    if (!site) throw new DomainError('unknown_site', { site: number });
    return site.id;
  });
}

/**
 * Gives a person a study role, or changes the flags and sites of the role they hold; the export
 * and unblinded rights are set exactly as given, so a manager's role given again without the export right
 * stops their read keys for good (stopKeysOfMaker). Giving a role or a right back restarts no stopped key. Audited.
 */
export async function grantRole(
  stores: Stores,
  actor: Actor,
  input: { study: string; email: string; role: RoleName; canExport: boolean; unblinded: boolean; sites?: string[] },
): Promise<Role> {
  const study = await requireStudy(stores.studies, input.study);
  const user = await requireUser(stores.people, input.email);
  const siteIds = await siteIdsOf(stores.studies, study, input.sites);
  const role = {
    studyId: study.id,
    userId: user.id,
    role: input.role,
    canExport: input.canExport,
    unblinded: input.unblinded,
    allSites: siteIds === undefined,
    siteIds: siteIds ?? (await stores.studies.sites(study)).map((s) => s.id),
  };
  const id = await stores.people.upsertRole(role);
  await stores.audit.append([auditEntry(actor, study.id, {
    action: 'role.granted',
    details: { email: user.email, role: input.role, can_export: input.canExport, unblinded: input.unblinded, sites: input.sites ?? 'all' },
  })]);
  await stopKeysOfMaker(stores, actor, { studyId: study.id, userId: user.id });
  return { id, ...role };
}

/**
 * Takes a role away, or only its export or unblinded right. Keys made by the person that this stops
 * (every key when the manager role goes, read keys when its export right goes) are stopped for good in
 * the same transaction, each audited (stopKeysOfMaker): giving the role back restarts none. Their webhook
 * subscriptions receive only what the role left allows, from the next event written and from the next one
 * sent (waiting events it no longer allows are withheld; withheldReasonSql in src/db/webhooks.ts).
 */
export async function revokeRole(
  stores: Stores,
  actor: Actor,
  input: { study: string; email: string; role?: RoleName; export?: boolean; unblinded?: boolean },
): Promise<{ removed: RoleName[]; changed: RoleName[] }> {
  const study = await requireStudy(stores.studies, input.study);
  const user = await requireUser(stores.people, input.email);
  const roles = (await stores.people.roles(study.id, user.id)).filter((r) => !input.role || r.role === input.role);
  if (roles.length === 0) throw new DomainError('role_not_found', { email: user.email, study: study.code });
  const onlyRights = Boolean(input.export || input.unblinded);
  const removed: RoleName[] = [];
  const changed: RoleName[] = [];
  for (const role of roles) {
    if (onlyRights) {
      await stores.people.upsertRole({
        ...role,
        canExport: input.export ? false : role.canExport,
        unblinded: input.unblinded ? false : role.unblinded,
      });
      changed.push(role.role);
    } else {
      await stores.people.deleteRole(role.id);
      removed.push(role.role);
    }
  }
  await stores.audit.append([auditEntry(actor, study.id, {
    action: onlyRights ? 'role.rights_revoked' : 'role.revoked',
    details: { email: user.email, roles: roles.map((r) => r.role), export: Boolean(input.export), unblinded: Boolean(input.unblinded) },
  })]);
  await stopKeysOfMaker(stores, actor, { studyId: study.id, userId: user.id });
  return { removed, changed };
}
