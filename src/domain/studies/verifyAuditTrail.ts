import { verifyChain, type ChainVerdict } from '../auditChain.js';
import type { AuditStore, StudyStore } from '../stores.js';
import { requireStudy } from './requireStudy.js';

/** Checks a study's audit trail end to end and names the first row that was altered or follows a removed one. */
export async function verifyAuditTrail(stores: { studies: StudyStore; audit: AuditStore }, studyCode: string): Promise<ChainVerdict> {
  const study = await requireStudy(stores.studies, studyCode);
  return verifyChain(await stores.audit.chain(study.id));
}
