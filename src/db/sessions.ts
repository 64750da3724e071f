import type { Knex } from 'knex';
import type { SignInStore } from '../domain/people/signIn.js';
import type { SessionStore } from '../domain/people/staffSessions.js';

const TABLE = 'sessions';

/**
 * Staff sign-in: portal sessions (only the hash of a session id is kept) and the count of failed
 * sign-ins on `users` that locks a person out. Deadlines are computed with the database clock, so
 * every service process agrees on them.
 */
export function sessionStore(db: Knex): SessionStore & SignInStore {
  return {
    async insert(session) {
      await db(TABLE).insert({
        id_hash: session.idHash,
        user_id: session.userId,
        csrf_token: session.csrfToken,
        expires_at: db.raw("now() + ? * interval '1 millisecond'", [session.idleMs]),
        absolute_expires_at: db.raw("now() + ? * interval '1 millisecond'", [session.absoluteMs]),
      });
    },
    async touch(idHash, idleMs) {
      const [row] = await db(TABLE)
        .where('id_hash', idHash)
        .andWhere('expires_at', '>', db.fn.now())
        .update({
          last_seen_at: db.fn.now(),
          expires_at: db.raw("least(now() + ? * interval '1 millisecond', absolute_expires_at)", [idleMs]),
        })
        .returning<{ user_id: number; csrf_token: string }[]>(['user_id', 'csrf_token']);
      return row ? { userId: row.user_id, csrfToken: row.csrf_token } : undefined;
    },
    async remove(idHash) {
      await db(TABLE).where('id_hash', idHash).delete();
    },
    async removeExpired() {
      await db(TABLE).where('expires_at', '<=', db.fn.now()).delete();
    },
    async takeSignInAttempt(userId, limit, lockMs) {
      // One statement: the row lock it takes makes concurrent attempts count one after the other.
      // A lock that is over leaves `locked_until` set (its rows pass the where): the count then starts again at 1.
      const count = "case when locked_until is not null then 1 else failed_sign_ins + 1 end";
      const rows = await db('users')
        .where('id', userId)
        .andWhere((q) => { q.whereNull('locked_until').orWhere('locked_until', '<=', db.fn.now()); })
        .update({
          failed_sign_ins: db.raw(count),
          locked_until: db.raw(`case when ${count} >= ? then now() + ? * interval '1 millisecond' else null end`, [limit, lockMs]),
        })
        .returning('id');
      return rows.length > 0;
    },
    async clearSignInFailures(userId) {
      await db('users').where('id', userId).update({ failed_sign_ins: 0, locked_until: null });
    },
  };
}
