import { DomainError } from '../errors.js';
import { importRefOf } from '../fhir/importId.js';
import type { PatientStore, ReadLogRow, ReadLogStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';

export const DEFAULT_READS_SHOWN = 50;
const MAX_READS_SHOWN = 1000;

/** What stands for a patient a read named, shown to someone who may not see that patient's site. */
const PATIENT_NOT_SHOWN = '…';

/** The patient a read's filters name: its `subject` filter, or the patient of the FHIR import it read (`<study>-<subject>-<n>`). */
function patientNamed(studyCode: string, filters: Record<string, unknown>): { filter: 'subject' | 'import'; subject: string } | undefined {
  if (typeof filters.subject === 'string') return { filter: 'subject', subject: filters.subject };
  const ref = typeof filters.import === 'string' ? importRefOf(studyCode, filters.import) : null;
  return ref ? { filter: 'import', subject: ref.subject } : undefined;
}

/**
 * The last reads of a study, newest first: which key read, when, with which call and filters, and
 * how many rows it got (interface description, "Audit and read log" 3: listed at the bottom of the
 * study's API page; `sdx reads` on the command line).
 *
 * @param viewerSiteIds - the sites of the person the list is shown to (the API page): a read that named a
 *   patient of another site, whom that person may not see anywhere else, keeps the call and its rows but
 *   not the patient's number (`PATIENT_NOT_SHOWN`); a number that is no patient of the study is not shown
 *   either. Without it (the command line's operator) every read is listed as logged.
 */
export async function listReads(
  stores: { studies: StudyStore; readLog: ReadLogStore; patients: PatientStore },
  studyCode: string,
  limit = DEFAULT_READS_SHOWN,
  viewerSiteIds?: readonly number[],
): Promise<ReadLogRow[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_READS_SHOWN) throw new DomainError('invalid_reads_limit', { max: MAX_READS_SHOWN });
  const study = await requireStudy(stores.studies, studyCode);
  const reads = await stores.readLog.lastReads(study.id, limit);
  if (viewerSiteIds === undefined) return reads;
  const named = reads.map((r) => patientNamed(study.code, r.filters));
  const subjects = [...new Set(named.flatMap((n) => (n ? [n.subject] : [])))];
  const siteOf = new Map((await stores.patients.findBySubjects(study.id, subjects)).map((p) => [p.subject, p.siteId]));
  return reads.map((read, i) => {
    const patient = named[i];
    if (!patient) return read;
    const site = siteOf.get(patient.subject);
    return site !== undefined && viewerSiteIds.includes(site) ? read : { ...read, filters: { ...read.filters, [patient.filter]: PATIENT_NOT_SHOWN } };
  });
}
