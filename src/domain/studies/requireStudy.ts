import { DomainError } from '../errors.js';
import type { Study, StudyStore } from '../stores.js';

/** The study of that code, or `study_not_found`. */
export async function requireStudy(studies: StudyStore, code: string): Promise<Study> {
  const study = await studies.findByCode(code);
  // Asked by a person or the command line, never with an API key: the wording that names no key.
  if (!study) throw new DomainError('study_not_found', { study: code, variant: 'no_key' });
  return study;
}
