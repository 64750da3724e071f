import { DomainError } from '../errors.js';
import type { Patient, PeopleStore, Study, StudyStore } from '../stores.js';

/**
 * What a signed-in person may see in one study, from their roles: whether they manage it, may
 * export, are unblinded, and which sites they reach (issue 7: each page checks role, study and
 * sites). A study the person holds no role in is refused exactly like one that does not exist.
 */
export interface StaffAccess {
  study: Study;
  userId: number;
  manager: boolean;
  canExport: boolean;
  unblinded: boolean;
  /** The sites of all the person's roles in the study. */
  siteIds: number[];
  /** The sites of the manager role alone: those a key made by this person may cover. */
  managerSiteIds: number[];
}

export async function staffAccess(stores: { studies: StudyStore; people: PeopleStore }, userId: number, studyCode: string): Promise<StaffAccess> {
  const study = await stores.studies.findByCode(studyCode);
  const roles = study ? await stores.people.roles(study.id, userId) : [];
  if (!study || roles.length === 0) throw new DomainError('portal_forbidden');
  const managerRole = roles.find((r) => r.role === 'manager');
  return {
    study,
    userId,
    manager: Boolean(managerRole),
    // The export right belongs to the manager role: it decides who may make read keys.
    canExport: Boolean(managerRole?.canExport),
    unblinded: roles.some((r) => r.unblinded),
    siteIds: [...new Set(roles.flatMap((r) => r.siteIds))].sort((a, b) => a - b),
    managerSiteIds: managerRole?.siteIds ?? [],
  };
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
