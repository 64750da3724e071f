/**
 * Whether a key works right now, and if not, why. Checked on every request, so revocation, the end
 * of the term and the maker's loss of the manager role or of the export right take effect at once
 * (interface description, "States and transitions: API key"). `stopped` has no way out: the role change
 * that stops a key keeps the stop on the key (stopKeysOfMaker), and a kept stop wins over the maker's
 * roles as they are now, so giving the role or the right back restarts nothing.
 */
export type KeyState =
  | { state: 'active' }
  | { state: 'revoked' }
  | { state: 'expired' }
  | { state: 'stopped'; why: KeyStopReason };

export type KeyStopReason = 'maker_not_manager' | 'maker_lost_export';

export interface KeyStateFacts {
  revokedAt: Date | null;
  expiresAt: Date;
  canRead: boolean;
  /** Why the key was stopped for good by a role change of its maker, if it was. */
  stoppedReason: KeyStopReason | null;
  /** Whether the key's maker still holds the manager role in the key's study. */
  makerIsManager: boolean;
  /** Whether the maker's manager role still carries the right to export data. */
  makerCanExport: boolean;
}

export function keyStateOf(facts: KeyStateFacts, now: Date): KeyState {
  if (facts.revokedAt) return { state: 'revoked' };
  if (facts.expiresAt.getTime() <= now.getTime()) return { state: 'expired' };
  // A kept stop wins over the maker's roles as they are now (a role or right given back restarts nothing).
  if (facts.stoppedReason) return { state: 'stopped', why: facts.stoppedReason };
  if (!facts.makerIsManager) return { state: 'stopped', why: 'maker_not_manager' };
  if (facts.canRead && !facts.makerCanExport) return { state: 'stopped', why: 'maker_lost_export' };
  return { state: 'active' };
}
