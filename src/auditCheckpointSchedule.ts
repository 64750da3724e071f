import type { Knex } from 'knex';
import { checkpointFiles, loadSigningKey } from './auditCheckpointFiles.js';
import type { Config } from './config.js';
import type { CheckpointStore } from './domain/auditCheckpoint.js';
import { describeVerdict } from './domain/auditCheckpoint.js';
import { checkpointAuditTrail, type CheckpointOutcome } from './domain/studies/checkpointAuditTrail.js';
import { inTransaction } from './db/stores.js';
import { listStudyCodes } from './db/studies.js';

/** The checkpoint folder and key of the configuration. */
export function configuredCheckpoints(config: Config): CheckpointStore {
  return checkpointFiles(config.auditCheckpointDir, loadSigningKey(config.auditSigningKeyFile));
}

/** Checkpoints one study in a transaction of its own (the checkpoint lock is held to its end). */
export function checkpointStudy(knex: Knex, checkpoints: CheckpointStore, study: string, acceptLoss?: string): Promise<CheckpointOutcome> {
  return inTransaction(knex, (s) => checkpointAuditTrail(s, checkpoints, study, new Date(), acceptLoss));
}

function log(level: 'info' | 'error', message: string, study?: string): void {
  process.stderr.write(`${JSON.stringify({ level, at: new Date().toISOString(), source: 'audit-checkpoint', study, message })}\n`);
}

/**
 * One round of the service's checkpoints: each study whose chain moved gets one. Several service
 * processes may run it at once: the checkpoint lock makes the later ones find the head unchanged.
 * A broken trail is logged as an error and never signed; one study's failure does not stop the others.
 */
export async function checkpointEveryStudy(knex: Knex, checkpoints: CheckpointStore): Promise<void> {
  for (const study of await listStudyCodes(knex)) {
    const outcome = await checkpointStudy(knex, checkpoints, study).catch((error: Error) => {
      log('error', error.message, study);
      return undefined;
    });
    if (outcome?.written === false && outcome.reason === 'broken') log('error', `audit trail not checkpointed: ${describeVerdict(outcome.verdict)}`, study);
  }
}

/** Runs checkpointEveryStudy every `auditCheckpointMinutes`; returns a stop function. */
export function scheduleAuditCheckpoints(config: Config, knex: Knex): () => void {
  if (config.auditCheckpointMinutes === undefined) return () => undefined;
  const checkpoints = configuredCheckpoints(config);
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    // A round still running (a slow database) is not doubled up.
    running ??= checkpointEveryStudy(knex, checkpoints).catch((error: Error) => log('error', error.message)).finally(() => { running = undefined; });
  }, config.auditCheckpointMinutes * 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
