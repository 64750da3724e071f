import { describeVerdict, judgeTrail, type AuditVerdict, type CheckpointStore } from '../auditCheckpoint.js';
import type { AuditStore, StudyStore } from '../stores.js';
import { requireStudy } from './requireStudy.js';

export type CheckpointOutcome =
  | { written: true; rows: number; at: string; accepted?: string }
  | { written: false; reason: 'unchanged' | 'empty'; rows: number }
  | { written: false; reason: 'broken'; verdict: AuditVerdict };

/**
 * Anchors a study's audit chain head outside the database (issue 21.4). Run inside a transaction:
 * the checkpoint lock makes several service processes and the command line take turns, so one
 * writes and the others find the head unchanged. A chain that does not verify is never signed:
 * a checkpoint of a truncated table would bless the truncation, unless an operator accepts the loss
 * with a reason, which the new checkpoint carries.
 */
export async function checkpointAuditTrail(
  stores: { studies: StudyStore; audit: AuditStore },
  checkpoints: CheckpointStore,
  studyCode: string,
  now: Date,
  /** An operator's reason to re-anchor a whole chain that no longer reaches its last checkpoint (a restore lost rows). */
  acceptLoss?: string,
): Promise<CheckpointOutcome> {
  const study = await requireStudy(stores.studies, studyCode);
  await stores.audit.lockCheckpoints(study.id);
  const chain = await stores.audit.chain(study.id);
  const stored = await checkpoints.latest(study.code);
  const verdict = judgeTrail(chain, stored);
  // Only a loss against the checkpoint may be accepted: an altered chain or a forged checkpoint never.
  const acceptable = !verdict.ok && acceptLoss !== undefined && (verdict.problem === 'missing_after_checkpoint' || verdict.problem === 'diverged_from_checkpoint');
  if (!verdict.ok && !acceptable) return { written: false, reason: 'broken', verdict };
  const head = chain.at(-1);
  if (!head?.hash) return { written: false, reason: 'empty', rows: 0 };
  if (!acceptable && stored?.checkpoint.rows === chain.length) return { written: false, reason: 'unchanged', rows: chain.length };
  const at = now.toISOString();
  const accepted = acceptable ? `${describeVerdict(verdict)}; accepted: ${acceptLoss}` : undefined;
  await checkpoints.append({ study: study.code, studyId: study.id, rows: chain.length, lastId: head.id, lastHash: head.hash, at, accepted });
  return { written: true, rows: chain.length, at, accepted };
}
