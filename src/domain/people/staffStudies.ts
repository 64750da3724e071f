import type { RoleName } from '../stores.js';

/** A study a person holds a role in, for the portal's start page. */
export interface StaffStudy { code: string; name: string; roles: RoleName[] }

export interface StaffStudiesStore {
  studiesOf(userId: number): Promise<StaffStudy[]>;
}

/** The studies a signed-in person works in, in code order; someone without a role sees none. */
export function staffStudies(stores: { portalReads: StaffStudiesStore }, userId: number): Promise<StaffStudy[]> {
  return stores.portalReads.studiesOf(userId);
}
