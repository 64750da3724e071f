/**
 * Whether a key works right now, and if not, why. Checked on every request, so revocation, the end
 * of the term and the maker's loss of the manager role or of the export right take effect at once
 * (interface description, "States and transitions: API key").
 */
export type KeyState =
  | { state: 'active' }
  | { state: 'revoked' }
  | { state: 'expired' }
  | { state: 'stopped'; why: 'maker_not_manager' | 'maker_lost_export' };

export interface KeyStateFacts {
  revokedAt: Date | null;
  expiresAt: Date;
  canRead: boolean;
  /** Whether the key's maker still holds the manager role in the key's study. */
  makerIsManager: boolean;
  /** Whether the maker's manager role still carries the right to export data. */
  makerCanExport: boolean;
}

export function keyStateOf(facts: KeyStateFacts, now: Date): KeyState {
  if (facts.revokedAt) return { state: 'revoked' };
  if (facts.expiresAt.getTime() <= now.getTime()) return { state: 'expired' };
  if (!facts.makerIsManager) return { state: 'stopped', why: 'maker_not_manager' };
  if (facts.canRead && !facts.makerCanExport) return { state: 'stopped', why: 'maker_lost_export' };
  return { state: 'active' };
}
