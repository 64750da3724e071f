import type { Knex } from 'knex';
import { CHAIN_START, chainHash, type ChainedContent } from '../domain/auditChain.js';
import { DomainError } from '../domain/errors.js';
import type { AuditEntry, AuditStore } from '../domain/stores.js';
import { insertRows } from './insertRows.js';
import { withTransaction, type BeforeCommit } from './transaction.js';

const TABLE = 'audit_events';

/** A row of `audit_events` as the table holds it. */
export interface AuditEventRecord {
  id: number; study_id: number; at: Date; actor_type: string; actor_id: number | null; author: string; reason: string; action: string;
  patient_id: number | null; record_id: number | null; field_code: string | null; old_value: string | null; new_value: string | null;
  details: Record<string, unknown>; prev_hash: string | null; hash: string | null;
}

/** Advisory lock keys (with the study id): appending to a study's chain, and checkpointing it. */
const APPEND_LOCK = 0x5d_a0d17;
const CHECKPOINT_LOCK = 0x5d_a0d18;

/**
 * The audit trail. Entries are buffered during a use case and appended as its transaction's last
 * step (`beforeCommit`, given with the transaction by withTransaction), under a per-study advisory lock
 * that the commit right after releases: the chain follows commit order without the lock being held across
 * the use case's own work. In a transaction without that step, appending is refused, so entries can never
 * be silently dropped.
 */
export function auditStore(db: Knex, beforeCommit?: BeforeCommit): AuditStore {
  const buffered: AuditEntry[] = [];
  /** Studies whose rows this transaction appends only while they are unlocked (appendOnlyWhileUnlocked). */
  const unlockedOnly = new Set<number>();
  const flush = async (trx: Knex) => {
    if (buffered.length === 0) return;
    const entries = buffered.splice(0);
    let transactionTime: string | undefined;
    for (const studyId of [...new Set(entries.map((e) => e.studyId))].sort((a, b) => a - b)) {
      // The transaction's time (now() does not move within it) comes with the lock: a round trip fewer per write.
      // The last hash cannot come with it: this statement's snapshot is older than the lock it waits for.
      const { rows: [{ now }] } = await trx.raw<{ rows: [{ now: Date }] }>('select now() as now, pg_advisory_xact_lock(?, ?)', [APPEND_LOCK, studyId]);
      // Millisecond precision, so the time hashed is exactly the time stored and read back.
      const at = (transactionTime ??= new Date(now).toISOString());
      // With the lock held, the study's lock as committed: changing it appends a row too, so a lock that committed
      // before this is seen here, and one not yet committed commits after this transaction. The same round trip.
      const { rows: [last] } = await trx.raw<{ rows: [{ hash: string | null; locked: boolean }] }>(
        `select (select a.hash from ${TABLE} a where a.study_id = ? order by a.id desc limit 1) as hash, (select s.locked from studies s where s.id = ?) as locked`,
        [studyId, studyId],
      );
      if (last.locked && unlockedOnly.has(studyId)) throw new DomainError('study_locked');
      let prev = last.hash ?? CHAIN_START;
      const rows = entries.filter((e) => e.studyId === studyId).map((e) => {
        const content: ChainedContent = {
          studyId, at, actorType: e.actorType, actorId: e.actorId, author: e.author, reason: e.reason, action: e.action,
          patientId: e.patientId ?? null, recordId: e.recordId ?? null, fieldCode: e.fieldCode ?? null,
          oldValue: e.oldValue ?? null, newValue: e.newValue ?? null, details: e.details ?? {},
        };
        const hash = chainHash(prev, content);
        const row = {
          study_id: studyId, at, actor_type: content.actorType, actor_id: content.actorId, author: content.author, reason: content.reason,
          action: content.action, patient_id: content.patientId, record_id: content.recordId, field_code: content.fieldCode,
          old_value: content.oldValue, new_value: content.newValue, details: content.details, prev_hash: prev, hash,
        };
        prev = hash;
        return row;
      });
      // One statement for the whole trail of a use case: a records call of 500 forms writes some 6,000 rows.
      await insertRows(trx, TABLE, rows);
    }
  };
  let hooked = false;
  return {
    async append(entries) {
      buffered.push(...entries);
      // Outside a transaction there is no commit to wait for: write at once, in a transaction of its own.
      if (!db.isTransaction) return withTransaction(db, (trx) => flush(trx));
      if (!beforeCommit) throw new Error('the audit trail needs the commit step of a transaction opened by withTransaction');
      if (!hooked) {
        beforeCommit(() => flush(db));
        hooked = true;
      }
    },
    appendOnlyWhileUnlocked(studyId) {
      unlockedOnly.add(studyId);
    },
    chain: (studyId) => chainRows(db, studyId),
    async lockCheckpoints(studyId) {
      await db.raw('select pg_advisory_xact_lock(?, ?)', [CHECKPOINT_LOCK, studyId]);
    },
  };
}

/** A study's audit rows in chain order, as the verifier reads them. */
async function chainRows(db: Knex, studyId: number) {
  const rows = await db(TABLE).where({ study_id: studyId }).orderBy('id').select<AuditEventRecord[]>('*');
  return rows.map((r) => ({
    id: r.id, prevHash: r.prev_hash, hash: r.hash, studyId: r.study_id, at: new Date(r.at).toISOString(), actorType: r.actor_type,
    actorId: r.actor_id, author: r.author, reason: r.reason, action: r.action, patientId: r.patient_id, recordId: r.record_id,
    fieldCode: r.field_code, oldValue: r.old_value, newValue: r.new_value, details: r.details,
  }));
}
