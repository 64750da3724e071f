import type { Knex } from 'knex';
import type { ReadLogRow, ReadLogStore } from '../domain/stores.js';

const TABLE = 'read_log';

/** A row of `read_log` with the name of its key. */
interface ReadLogRecord { id: number; api_key_id: number; key_name: string; at: Date; operation: string; filters: Record<string, unknown>; rows: number }

function rowToRead(r: ReadLogRecord): ReadLogRow {
  return { id: r.id, keyId: r.api_key_id, keyName: r.key_name, at: r.at, operation: r.operation, filters: r.filters, rows: r.rows };
}

export function readLogStore(db: Knex): ReadLogStore {
  return {
    async logRead(entry) {
      // One statement for the log row and the key's counter: every page of a read call pays for it. The
      // counter is an increment in the database, so concurrent reads from several processes lose no count.
      await db.raw(
        `with logged as (insert into ${TABLE} (api_key_id, study_id, operation, filters, rows) values (:keyId, :studyId, :operation, :filters, :rows))
         update api_keys set rows_read = rows_read + :rows where id = :keyId`,
        { keyId: entry.keyId, studyId: entry.studyId, operation: entry.operation, filters: JSON.stringify(entry.filters), rows: entry.rows },
      );
    },
    async lastReads(studyId, limit) {
      const rows = await db(`${TABLE} as r`)
        .join('api_keys as k', 'k.id', 'r.api_key_id')
        .where('r.study_id', studyId)
        .select<ReadLogRecord[]>('r.*', 'k.name as key_name')
        // Newest first by id, the order reads were logged in: it walks the (study_id, id) index instead of
        // sorting every read of the study, which the log of a busy key soon makes large.
        .orderBy('r.id', 'desc')
        .limit(limit);
      return rows.map(rowToRead);
    },
  };
}
