import type { Knex } from 'knex';
import { jsonParameter } from './jsonParameter.js';

/**
 * Inserts many rows with one statement and one parameter: the rows travel as one JSON array that
 * PostgreSQL expands with `jsonb_populate_recordset`. Knex's multi-row insert binds every cell (an
 * audit trail of 6,000 rows is 90,000 parameters, in slices under the 65,535 limit) and spends more CPU
 * building that statement than the database spends running it (bench/README.md, "Bulk inserts").
 *
 * All rows must have the same members, named as the table's columns; columns left out take their
 * defaults. A jsonb column takes the value itself, not its JSON text. Text is stored exactly as a bound
 * parameter would store it (jsonParameter): a lone surrogate becomes U+FFFD in both. `tail` (constant SQL: an
 * `on conflict` or `returning` clause) ends the statement; the rows it returns are returned, of the type
 * `Returned` its `returning` list gives.
 */
export async function insertRows<Returned = never>(db: Knex, table: string, rows: Record<string, unknown>[], tail = ''): Promise<Returned[]> {
  const [first] = rows;
  if (first === undefined) return [];
  const columns = Object.keys(first).map((c) => `"${c.replace(/"/g, '""')}"`).join(', ');
  const { rows: returned } = await db.raw<{ rows: Returned[] }>(`insert into ?? (${columns}) select ${columns} from jsonb_populate_recordset(null::??, ?::jsonb) ${tail}`, [table, table, jsonParameter(rows)]);
  return returned;
}

