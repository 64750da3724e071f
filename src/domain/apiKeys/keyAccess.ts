import { DomainError } from '../errors.js';
import type { Study } from '../stores.js';
import type { KeyContext } from './keyContext.js';

export type KeyRight = 'read' | 'write' | 'enrol' | 'any';

/**
 * Whether a key may make a call on a study (interface description, Authentication 2-3): another
 * study answers exactly like a study that does not exist (404), so a key learns nothing about
 * studies it does not belong to; a missing right or the API switched off answers 403.
 */
export function checkKeyAccess(key: KeyContext, studyCode: string, study: Study | undefined, right: KeyRight): Study {
  if (!study || study.id !== key.studyId || study.code !== studyCode) throw new DomainError('study_not_found', { study: studyCode });
  if (!study.apiEnabled) throw new DomainError('api_disabled');
  const allowed = right === 'any' || (right === 'read' && key.canRead) || (right === 'write' && key.canWrite) || (right === 'enrol' && key.canEnrol);
  if (!allowed) throw new DomainError('right_missing', { right, variant: right });
  return study;
}
