import { actorRef, authorOf, reasonOf, type Actor } from './actor.js';
import type { AuditEntry } from './stores.js';

/**
 * The actions of the audit rows that record a value of a record being set or changed. A record's other rows
 * that name a field (a query opened, answered or closed on it) are no change of its value.
 */
export const VALUE_CHANGE_ACTIONS = ['record.value_set', 'record.value_changed'] as const;

/**
 * One audit entry made by `actor` in a study: the author and reason come from the actor, so
 * every way in (API key, FHIR import, portal, command line) is recorded the same way.
 */
export function auditEntry(
  actor: Actor,
  studyId: number,
  entry: Omit<AuditEntry, 'studyId' | 'actorType' | 'actorId' | 'author' | 'reason'> & { reason?: string },
): AuditEntry {
  return {
    ...entry,
    studyId,
    actorType: actor.kind,
    actorId: actorRef(actor).id,
    author: authorOf(actor),
    reason: entry.reason ?? reasonOf(actor),
  };
}
