import type { StaffAccess } from '../people/staffAccess.js';
import type { StudyStore } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';

/** One line of a study's patient list in the portal. */
export interface SitePatient {
  subject: string;
  site: string;
  status: string;
  enrolledOn: string;
  /** Open queries on forms the person may see. */
  openQueries: number;
  /** FHIR imports waiting for the site team's review. */
  proposedImports: number;
}

export interface SitePatientsStore {
  patientsAt(studyId: number, siteIds: number[], hiddenFormIds: number[]): Promise<SitePatient[]>;
}

/** The patients of the sites a person reaches, in subject order: the way to a patient's card. */
export async function sitePatients(stores: { studies: StudyStore; portalReads: SitePatientsStore }, access: StaffAccess): Promise<SitePatient[]> {
  const study = access.study;
  const ids = await stores.studies.designIds(study);
  const hidden = study.design.forms.filter((f) => formHidden(study, f, access.unblinded)).map((f) => ids.forms.get(f.code)!);
  return stores.portalReads.patientsAt(study.id, access.siteIds, hidden);
}
