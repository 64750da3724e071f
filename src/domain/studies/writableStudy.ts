import { DomainError } from '../errors.js';
import type { Study, StudyStore } from '../stores.js';

/**
 * The study as a write must judge it: its settings (lock, enrolment, API switch) read again in the write's
 * own transaction, not as the request found them with its key, which is looked up before the body arrives
 * (up to BODY_DEADLINE_SECONDS later), and share-locked to the commit, so that setting the lock waits for
 * the writes under way and every later write sees it. No data changes once the lock is committed
 * (interface description: 423 when the study database is locked). Every write path calls it first.
 *
 * @throws DomainError `study_locked`
 */
export async function writableStudy(studies: Pick<StudyStore, 'settingsForWrite'>, study: Study): Promise<Study> {
  const current: Study = { ...study, ...(await studies.settingsForWrite(study.id)) };
  if (current.locked) throw new DomainError('study_locked');
  return current;
}
