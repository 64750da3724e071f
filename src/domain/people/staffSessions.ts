import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Portal sessions of staff. The session id is 256 random bits, given to the browser only; the
 * database keeps its SHA-256, so a copy of the sessions table lets no one in. Each session carries
 * a synchronizer token that every form must send back (CSRF). A session ends after 30 minutes
 * without a request, 12 hours after it began, or at sign-out, whichever comes first.
 */
const SESSION_IDLE_MS = 30 * 60_000;
const SESSION_ABSOLUTE_MS = 12 * 3_600_000;

const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface SessionRow {
  /** Null for the session that only carries the sign-in form's CSRF token. */
  userId: number | null;
  csrfToken: string;
}

export interface SessionStore {
  insert(session: SessionRow & { idHash: Buffer; idleMs: number; absoluteMs: number }): Promise<void>;
  /** The live session of this hash, its idle deadline moved forward (never past its absolute end); undefined when absent or over. */
  touch(idHash: Buffer, idleMs: number): Promise<SessionRow | undefined>;
  remove(idHash: Buffer): Promise<void>;
  /** Deletes the sessions that are over, so the table holds only live ones. */
  removeExpired(): Promise<void>;
}

export interface StaffSession extends SessionRow {
  /** The value of the session cookie; never stored. */
  id: string;
}

const randomToken = () => randomBytes(32).toString('base64url');

function sessionIdHash(id: string): Buffer {
  return createHash('sha256').update(id, 'utf8').digest();
}

/** A new session with a new id and CSRF token: made at sign-in (a fresh id, so an id planted before it is worthless) and for the sign-in form. */
export async function startSession(store: SessionStore, userId: number | null): Promise<StaffSession> {
  const session: StaffSession = { id: randomToken(), userId, csrfToken: randomToken() };
  await store.insert({ idHash: sessionIdHash(session.id), userId, csrfToken: session.csrfToken, idleMs: SESSION_IDLE_MS, absoluteMs: SESSION_ABSOLUTE_MS });
  return session;
}

/** The live session a cookie names, or undefined (no cookie, a malformed one, an unknown, ended or expired session). */
export async function resumeSession(store: SessionStore, id: string | undefined): Promise<StaffSession | undefined> {
  if (!id || !ID_PATTERN.test(id)) return undefined;
  const row = await store.touch(sessionIdHash(id), SESSION_IDLE_MS);
  return row && { id, ...row };
}

export async function endSession(store: SessionStore, id: string): Promise<void> {
  await store.remove(sessionIdHash(id));
}

/** Whether a form's token is the session's synchronizer token (compared in constant time). */
export function csrfTokenMatches(session: SessionRow, token: unknown): boolean {
  if (typeof token !== 'string') return false;
  const expected = Buffer.from(session.csrfToken, 'utf8');
  const given = Buffer.from(token, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
