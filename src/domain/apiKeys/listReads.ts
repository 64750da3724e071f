import { DomainError } from '../errors.js';
import type { ReadLogRow, ReadLogStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';

export const DEFAULT_READS_SHOWN = 50;
const MAX_READS_SHOWN = 1000;

/**
 * The last reads of a study, newest first: which key read, when, with which call and filters, and
 * how many rows it got (interface description, "Audit and read log" 3: listed at the bottom of the
 * study's API page; `sdx reads` on the command line).
 */
export async function listReads(
  stores: { studies: StudyStore; readLog: ReadLogStore },
  studyCode: string,
  limit = DEFAULT_READS_SHOWN,
): Promise<ReadLogRow[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_READS_SHOWN) throw new DomainError('invalid_reads_limit', { max: MAX_READS_SHOWN });
  const study = await requireStudy(stores.studies, studyCode);
  return stores.readLog.lastReads(study.id, limit);
}
