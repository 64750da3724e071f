import { unblindedFor, type StaffAccess } from '../people/staffAccess.js';
import type { StudyStore } from '../stores.js';
import { hiddenFormIds } from '../studies/designForKey.js';

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

/** Patients shown on one page of the list. */
export const PATIENTS_PER_PAGE = 50;
/** A search longer than any subject number finds nothing anyway; it is cut here. */
const LONGEST_SEARCH = 100;

/** Which part of the list: subjects containing `search` (any case), after the subject `after`. */
export interface PatientListRequest { search?: string; after?: string }

/** A site whose patients are listed, with the forms whose queries its patients' lines leave out. */
interface ListedSite { siteId: number; hiddenFormIds: number[] }

export interface SitePatientsStore {
  /**
   * The patients of those sites in subject order, at most `limit`, subjects containing `contains` (any
   * case) and after `after`; each line counts no query on a form hidden at the patient's own site.
   */
  patientsAt(studyId: number, sites: ListedSite[], page: { contains?: string; after?: string; limit: number }): Promise<SitePatient[]>;
}

/**
 * The patients of the sites a person reaches, in subject order, a page at a time: the way to a
 * patient's card. Pages follow the subject (keyset), not an offset, so a patient enrolled while someone
 * pages is neither shown twice nor skipped; `next` is the subject to continue after, null on the last page.
 */
export async function sitePatients(
  stores: { studies: StudyStore; portalReads: SitePatientsStore },
  access: StaffAccess,
  request: PatientListRequest = {},
): Promise<{ patients: SitePatient[]; search: string; next: string | null }> {
  const study = access.study;
  const ids = await stores.studies.designIds(study);
  // Blinding is decided per site (a person may be unblinded at one site and blinded at another), so each
  // patient's line leaves out what is hidden at that patient's site.
  const sites = access.siteIds.map((siteId) => ({
    siteId, hiddenFormIds: hiddenFormIds(study, ids, unblindedFor(access, siteId)),
  }));
  const search = (request.search ?? '').trim().slice(0, LONGEST_SEARCH);
  const rows = await stores.portalReads.patientsAt(study.id, sites, {
    contains: search || undefined, after: request.after || undefined, limit: PATIENTS_PER_PAGE + 1,
  });
  const patients = rows.slice(0, PATIENTS_PER_PAGE);
  return { patients, search, next: rows.length > PATIENTS_PER_PAGE ? patients.at(-1)?.subject ?? null : null };
}
