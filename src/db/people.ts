import type { Knex } from 'knex';
import type { PeopleStore, Role, User } from '../domain/stores.js';
import { returnedRow } from './returnedRow.js';

interface UserRecord { id: number; email: string; name: string; password_hash: string | null }
/** A role as `roles` reads it: the `study_roles` row with its sites. */
interface RoleRecord { id: number; study_id: number; user_id: number; role: Role['role']; can_export: boolean; unblinded: boolean; all_sites: boolean; site_ids: number[] }

/**
 * The ids of the sites a `study_roles` row covers, as SQL over the row's alias: every site of its study, present
 * and future, when `all_sites`, else its `study_role_sites`; none when a left join found no role. The one
 * definition of a role's sites, for the roles themselves, a key's maker and a webhook subscription's creator.
 */
export function roleSiteIdsSql(role: string): string {
  return `case when ${role}.all_sites then (select coalesce(array_agg(site.id order by site.id), '{}') from sites site where site.study_id = ${role}.study_id)
    else (select coalesce(array_agg(rs.site_id order by rs.site_id), '{}') from study_role_sites rs where rs.study_role_id = ${role}.id) end`;
}

function rowToUser(r: UserRecord): User {
  return { id: r.id, email: r.email, name: r.name, passwordHash: r.password_hash };
}

export function peopleStore(db: Knex): PeopleStore {
  return {
    async findUserByEmail(email) {
      const row = await db('users').whereRaw('lower(email) = lower(?)', [email]).first<UserRecord | undefined>();
      return row ? rowToUser(row) : undefined;
    },
    async findUserById(id) {
      const row = await db('users').where({ id }).first<UserRecord | undefined>();
      return row ? rowToUser(row) : undefined;
    },
    async insertUser(user) {
      const { id } = returnedRow(await db('users').insert({ email: user.email, name: user.name, password_hash: user.passwordHash }).returning<{ id: number }[]>('id'));
      return id;
    },
    async updateUser(id, changes) {
      const update: Record<string, unknown> = {};
      if (changes.name !== undefined) update.name = changes.name;
      if (changes.passwordHash !== undefined) update.password_hash = changes.passwordHash;
      if (Object.keys(update).length > 0) await db('users').where({ id }).update(update);
    },
    async roles(studyId, userId, options = {}): Promise<Role[]> {
      const query = db('study_roles as r')
        .where({ 'r.study_id': studyId, 'r.user_id': userId })
        .select<RoleRecord[]>('r.*', db.raw(`${roleSiteIdsSql('r')} as site_ids`));
      const rows = await (options.forShare ? query.forShare() : query);
      return rows.map((r) => ({
        id: r.id, studyId: r.study_id, userId: r.user_id, role: r.role, canExport: r.can_export,
        unblinded: r.unblinded, allSites: r.all_sites, siteIds: r.site_ids,
      }));
    },
    async upsertRole(role) {
      const { id } = returnedRow(await db('study_roles')
        .insert({
          study_id: role.studyId, user_id: role.userId, role: role.role, can_export: role.canExport,
          unblinded: role.unblinded, all_sites: role.allSites,
        })
        .onConflict(['study_id', 'user_id', 'role'])
        .merge(['can_export', 'unblinded', 'all_sites'])
        .returning<{ id: number }[]>('id'));
      await db('study_role_sites').where({ study_role_id: id }).delete();
      if (!role.allSites && role.siteIds.length > 0) {
        await db('study_role_sites').insert(role.siteIds.map((siteId) => ({ study_role_id: id, site_id: siteId })));
      }
      return id;
    },
    async deleteRole(roleId) {
      await db('study_roles').where({ id: roleId }).delete();
    },
  };
}
