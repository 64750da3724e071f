import bcrypt from 'bcryptjs';
import type { Knex } from 'knex';
import { grantRole } from '../../src/domain/people/roles.js';
import { addUser } from '../../src/domain/people/users.js';
import { inTransaction } from '../../src/db/stores.js';
import { operator } from './factories.js';

/** The password of every person these tests sign in with. */
export const STAFF_PASSWORD = 'correct horse battery';

/**
 * Stored with bcrypt cost 4 instead of the service's 12: the check is the same bcrypt comparison,
 * and a suite that signs in dozens of times stays fast.
 */
const FAST_HASH = bcrypt.hashSync(STAFF_PASSWORD, 4);

export interface StaffRole { study: string; role: 'manager' | 'site_staff'; sites?: string[]; canExport?: boolean; unblinded?: boolean }

/** A staff person who can sign in to the portal, with a study role when given. */
export async function addStaff(knex: Knex, email: string, role?: StaffRole, name = `Name of ${email.split('@')[0]}`): Promise<number> {
  return inTransaction(knex, async (s) => {
    const { user } = await addUser(s.people, { email, name });
    await s.people.updateUser(user.id, { passwordHash: FAST_HASH });
    if (role) await grantStaffRole(s, email, role);
    return user.id;
  });
}

/** Gives a person one more study role (a person may hold a manager and a site-staff role at once). */
export async function addRole(knex: Knex, email: string, role: StaffRole): Promise<void> {
  await inTransaction(knex, (s) => grantStaffRole(s, email, role));
}

function grantStaffRole(s: Parameters<typeof grantRole>[0], email: string, role: StaffRole) {
  return grantRole(s, operator, { study: role.study, email, role: role.role, canExport: role.canExport ?? false, unblinded: role.unblinded ?? false, sites: role.sites });
}
