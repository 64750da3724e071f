import { DomainError } from '../errors.js';
import type { AuditStore, Study } from '../stores.js';

/**
 * Refuses a write to a locked study (`study_locked`): at once when the study is locked as the write begins,
 * and again when the write's audit rows are appended, as its transaction's last step. A study's writes and
 * its lock take turns on the study's audit chain, so a write that began before the lock and would commit
 * after it is refused there, with nothing of it kept: no data changes once the lock is in the trail.
 */
export function requireUnlocked(audit: Pick<AuditStore, 'appendOnlyWhileUnlocked'>, study: Pick<Study, 'id' | 'locked'>): void {
  if (study.locked) throw new DomainError('study_locked');
  audit.appendOnlyWhileUnlocked(study.id);
}
