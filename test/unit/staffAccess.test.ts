/**
 * A person's access in a study from their roles (src/domain/people/staffAccess.ts): which sites they
 * reach, and at which of them they see the unblinded team's forms. The same rule through the portal's
 * pages on a real database is in test/api/portalBlinding.test.ts.
 */
import { expect } from 'chai';
import { staffAccessOf, unblindedFor } from '../../src/domain/people/staffAccess.js';
import type { Role, Study } from '../../src/domain/stores.js';

const study = { id: 1, code: 'DEMO' } as Study;
const role = (name: Role['role'], siteIds: number[], unblinded: boolean): Role =>
  ({ id: 0, studyId: 1, userId: 7, role: name, canExport: false, unblinded, allSites: false, siteIds });

describe('staffAccessOf and unblindedFor', () => {
  const cases: { name: string; roles: Role[]; unblindedAt: Record<number, boolean> }[] = [
    { name: 'one blinded role', roles: [role('site_staff', [1], false)], unblindedAt: { 1: false, 2: false } },
    { name: 'one unblinded role: only at its sites', roles: [role('site_staff', [1], true)], unblindedAt: { 1: true, 2: false } },
    {
      name: 'unblinded manager of site 2, blinded site staff of site 1: blinded at site 1',
      roles: [role('manager', [2], true), role('site_staff', [1], false)], unblindedAt: { 1: false, 2: true },
    },
    {
      name: 'a blinded and an unblinded role over the same site: unblinded there',
      roles: [role('manager', [1, 2], false), role('site_staff', [1], true)], unblindedAt: { 1: true, 2: false },
    },
    { name: 'no role', roles: [], unblindedAt: { 1: false } },
  ];
  for (const { name, roles, unblindedAt } of cases) {
    it(name, () => {
      const access = staffAccessOf(study, 7, roles);
      const seen = Object.fromEntries(Object.keys(unblindedAt).map((site) => [site, unblindedFor(access, Number(site))]));
      expect(seen).to.deep.equal(unblindedAt);
    });
  }

  it('reaches the sites of all roles, and keeps the manager role\'s sites apart', () => {
    const access = staffAccessOf(study, 7, [role('site_staff', [3, 1], false), role('manager', [2], true)]);
    expect(access).to.include({ manager: true, canExport: false });
    expect([access.siteIds, access.unblindedSiteIds, access.managerSiteIds]).to.deep.equal([[1, 2, 3], [2], [2]]);
  });
});
