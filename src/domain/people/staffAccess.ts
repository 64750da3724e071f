import { DomainError } from '../errors.js';
import type { Patient, PeopleStore, Role, Study, StudyStore } from '../stores.js';

/**
 * What a signed-in person may see in one study, from their roles: whether they manage it, may
 * export, where they are unblinded, and which sites they reach (issue 7: each page checks role, study
 * and sites). A study the person holds no role in is refused exactly like one that does not exist.
 */
export interface StaffAccess {
  study: Study;
  userId: number;
  manager: boolean;
  canExport: boolean;
  /** The sites of all the person's roles in the study. */
  siteIds: number[];
  /** The sites of the person's unblinded roles: where they see the unblinded team's forms (`unblindedFor`). */
  unblindedSiteIds: number[];
  /** The sites of the manager role alone: those a key made by this person may cover. */
  managerSiteIds: number[];
}

/** The person's access in a study from the roles they hold there (none: no site, nothing unblinded). */
export function staffAccessOf(study: Study, userId: number, roles: readonly Role[]): StaffAccess {
  const managerRole = roles.find((r) => r.role === 'manager');
  const sitesOf = (some: readonly Role[]) => [...new Set(some.flatMap((r) => r.siteIds))].sort((a, b) => a - b);
  return {
    study,
    userId,
    manager: Boolean(managerRole),
    // The export right belongs to the manager role: it decides who may make read keys.
    canExport: Boolean(managerRole?.canExport),
    siteIds: sitesOf(roles),
    unblindedSiteIds: sitesOf(roles.filter((r) => r.unblinded)),
    managerSiteIds: managerRole?.siteIds ?? [],
  };
}

export async function staffAccess(stores: { studies: StudyStore; people: PeopleStore }, userId: number, studyCode: string): Promise<StaffAccess> {
  const study = await stores.studies.findByCode(studyCode);
  const roles = study ? await stores.people.roles(study.id, userId) : [];
  if (!study || roles.length === 0) throw new DomainError('portal_forbidden');
  return staffAccessOf(study, userId, roles);
}

/**
 * Whether the person sees the unblinded team's forms for a patient of that site: only when one of their
 * roles covering the site is unblinded. A person unblinded as manager of one site and blinded as site
 * staff of another stays blinded for the other site's patients. Every portal page and decision about a
 * patient asks this, never "is any of the person's roles unblinded".
 */
export function unblindedFor(access: Pick<StaffAccess, 'unblindedSiteIds'>, siteId: number): boolean {
  return access.unblindedSiteIds.includes(siteId);
}

/** The study's API page and its keys are for the study's managers only. */
export function requireManager(access: StaffAccess): void {
  if (!access.manager) throw new DomainError('portal_forbidden');
}

/**
 * The patient of that subject when the person reaches the patient's site; a patient at another site
 * is refused exactly like one that does not exist, so no one learns of patients outside their sites.
 */
export async function requirePatient(patients: { findBySubject(studyId: number, subject: string): Promise<Patient | undefined> }, access: StaffAccess, subject: string): Promise<Patient> {
  const patient = await patients.findBySubject(access.study.id, subject);
  if (!patient || !access.siteIds.includes(patient.siteId)) throw new DomainError('portal_forbidden');
  return patient;
}
