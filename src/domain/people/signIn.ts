import { DomainError } from '../errors.js';
import type { PeopleStore, User } from '../stores.js';
import { passwordMatches } from './passwords.js';

/** Failed sign-ins in a row that lock a person out, and for how long (issue 7: lock-out after repeated failures). */
const MAX_FAILED_SIGN_INS = 5;
const LOCK_OUT_MS = 15 * 60_000;

export interface SignInStore {
  /**
   * Takes one sign-in attempt for a person, atomically, before the password is checked: false while
   * they are locked out. The attempt that reaches `limit` starts the lock, so parallel guesses cannot
   * slip past it; once the lock is over the count starts again.
   */
  takeSignInAttempt(userId: number, limit: number, lockMs: number): Promise<boolean>;
  /** A correct password: the count of failures starts again and any lock is lifted. */
  clearSignInFailures(userId: number): Promise<void>;
}

/**
 * A bcrypt hash of no one's password: an unknown e-mail is checked against it, so the answer takes
 * as long as for a known one and its timing does not tell which e-mails exist.
 */
const NO_ONE = '$2b$12$ZuOzXMID91B18fN4u5qv1epyftqmMAN3F0FmxaUQKxrcgzSQCJ3lO';

/**
 * Signs a staff person in with e-mail and password. A wrong e-mail, a wrong password, a person
 * without a password and a locked-out person all get the same `sign_in_failed`, so the answer never
 * tells whether an e-mail belongs to someone.
 */
export async function signIn(stores: { people: PeopleStore; sessions: SignInStore }, input: { email: string; password: string }): Promise<User> {
  const user = await stores.people.findUserByEmail(input.email.trim().toLowerCase());
  if (!user?.passwordHash) {
    await passwordMatches(input.password, NO_ONE);
    throw new DomainError('sign_in_failed');
  }
  if (!(await stores.sessions.takeSignInAttempt(user.id, MAX_FAILED_SIGN_INS, LOCK_OUT_MS))) throw new DomainError('sign_in_failed');
  if (!(await passwordMatches(input.password, user.passwordHash))) throw new DomainError('sign_in_failed');
  await stores.sessions.clearSignInFailures(user.id);
  return user;
}
