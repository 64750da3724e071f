import { judgeTrail, type AuditVerdict, type CheckpointStore } from '../auditCheckpoint.js';
import type { AuditStore, StudyStore } from '../stores.js';
import { requireStudy } from './requireStudy.js';

/**
 * Checks a study's audit trail end to end and names the first row that was altered or follows a
 * removed one; given the checkpoints, also rows removed from the end (truncation included), which
 * the chain alone cannot show.
 */
export async function verifyAuditTrail(
  stores: { studies: StudyStore; audit: AuditStore },
  studyCode: string,
  checkpoints?: CheckpointStore,
): Promise<AuditVerdict> {
  const study = await requireStudy(stores.studies, studyCode);
  return judgeTrail(await stores.audit.chain(study.id), await checkpoints?.latest(study.code));
}
