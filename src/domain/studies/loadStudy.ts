import { createHash } from 'node:crypto';
import { DomainError } from '../errors.js';
import type { StudyStore } from '../stores.js';
import type { StudyDesign } from '../studyDesign/types.js';

/** The ETag-grade fingerprint of a design: equal designs give equal hashes. */
function designHashOf(design: StudyDesign): string {
  return createHash('sha256').update(JSON.stringify(design)).digest('hex');
}

/**
 * Creates a study from a parsed design. Loading the same design again is a no-op (so set-up scripts
 * can run twice); loading a different design under an existing code is refused, because changing
 * the design of a study that may hold data needs its own, audited, migration path.
 */
export async function loadStudy(studies: StudyStore, design: StudyDesign): Promise<{ studyId: number; created: boolean }> {
  const hash = designHashOf(design);
  const existing = await studies.findByCode(design.code);
  if (existing) {
    if (existing.designHash !== hash) throw new DomainError('study_exists', { study: design.code });
    return { studyId: existing.id, created: false };
  }
  return { studyId: await studies.insertDesign(design, hash), created: true };
}
