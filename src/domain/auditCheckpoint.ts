import { verifyChain, type ChainVerdict } from './auditChain.js';

/**
 * A signed anchor of a study's audit chain kept outside the database (issue 21.4): the hash chain
 * alone cannot tell a truncated table, or one whose newest rows were deleted, from a shorter history.
 */
export interface AuditCheckpoint {
  study: string;
  studyId: number;
  /** How many rows the chain had: the checkpoint anchors rows 1..rows. */
  rows: number;
  lastId: number;
  lastHash: string;
  /** ISO time the checkpoint was taken. */
  at: string;
  /**
   * Set when an operator re-anchored a trail that no longer matched the checkpoint before (rows lost to
   * a restore): what they found and why they accepted it. The earlier checkpoints stay in the file.
   */
  accepted?: string;
}

/** The latest checkpoint as read back, with whether its signature holds under the service's key. */
export interface StoredCheckpoint { checkpoint: AuditCheckpoint; signatureValid: boolean }

/** Where checkpoints live: outside the database, append-only, one signed entry per checkpoint. */
export interface CheckpointStore {
  latest(study: string): Promise<StoredCheckpoint | undefined>;
  append(checkpoint: AuditCheckpoint): Promise<void>;
}

type CheckpointProblem =
  | { problem: 'missing_after_checkpoint'; missingFrom: number; missingTo: number; checkpointAt: string }
  | { problem: 'diverged_from_checkpoint'; row: number; checkpointAt: string }
  | { problem: 'checkpoint_signature_invalid'; checkpointAt: string };

/** Compares a chain, already found whole, with the study's latest checkpoint; undefined when they agree. */
function checkAgainstCheckpoint(chain: { hash: string | null }[], stored: StoredCheckpoint): CheckpointProblem | undefined {
  const { checkpoint, signatureValid } = stored;
  const checkpointAt = checkpoint.at;
  // A forged or damaged checkpoint anchors nothing: say so rather than trust or skip it.
  if (!signatureValid) return { problem: 'checkpoint_signature_invalid', checkpointAt };
  if (chain.length < checkpoint.rows) return { problem: 'missing_after_checkpoint', missingFrom: chain.length + 1, missingTo: checkpoint.rows, checkpointAt };
  // Each hash covers every row before it: the row at the checkpoint's position having its hash proves rows 1..N unchanged.
  if (checkpoint.rows > 0 && chain[checkpoint.rows - 1]?.hash !== checkpoint.lastHash) {
    return { problem: 'diverged_from_checkpoint', row: checkpoint.rows, checkpointAt };
  }
  return undefined;
}

/** What `sdx audit verify` reports: the chain's own verdict, then the checkpoint's. */
export type AuditVerdict =
  | (ChainVerdict & { checkpoint?: AuditCheckpoint })
  | ({ ok: false; rows: number; checkpoint: AuditCheckpoint } & CheckpointProblem);

/** Judges a study's chain, rows in id order, on its own and then against its latest checkpoint if there is one. */
export function judgeTrail(chain: Parameters<typeof verifyChain>[0], stored: StoredCheckpoint | undefined): AuditVerdict {
  const verdict = verifyChain(chain);
  if (!stored) return verdict;
  if (!verdict.ok) return { ...verdict, checkpoint: stored.checkpoint };
  const problem = checkAgainstCheckpoint(chain, stored);
  return problem ? { ok: false, rows: verdict.rows, checkpoint: stored.checkpoint, ...problem } : { ...verdict, checkpoint: stored.checkpoint };
}

/** One English line naming (ids are audit row ids; other numbers are positions in the study's chain, from 1) what a verdict found missing or wrong, for people reading the command's output. */
export function describeVerdict(verdict: AuditVerdict): string {
  if (verdict.ok) {
    return verdict.checkpoint
      ? `${verdict.rows} rows chained; rows 1..${verdict.checkpoint.rows} match the checkpoint of ${verdict.checkpoint.at}`
      : `${verdict.rows} rows chained; no checkpoint yet, so rows removed from the end would go unseen (run sdx audit checkpoint)`;
  }
  switch (verdict.problem) {
    case 'altered': return `the audit row of id ${verdict.id} was altered`;
    case 'missing_before': return `rows are missing before the audit row of id ${verdict.id}`;
    case 'missing_after_checkpoint': return `missing rows ${verdict.missingFrom}..${verdict.missingTo} after checkpoint of ${verdict.checkpointAt}`;
    case 'diverged_from_checkpoint': return `row ${verdict.row} is not the row the checkpoint of ${verdict.checkpointAt} signed: the trail was cut and written on`;
    case 'checkpoint_signature_invalid': return `the checkpoint of ${verdict.checkpointAt} does not carry a valid signature of this service's key`;
  }
}
