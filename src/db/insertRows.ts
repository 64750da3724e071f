import type { Knex } from 'knex';

/** `String.prototype.toWellFormed` (Node 20) is newer than the ES2022 library the project compiles against. */
type WellFormable = string & { toWellFormed(): string };

/** `\ud800`–`\udfff` as JSON.stringify escapes them; a proper pair is written as its two characters, never escaped. */
const LONE_SURROGATE_ESCAPE = /\\ud[89a-f][0-9a-f]{2}/i;

/**
 * Inserts many rows with one statement and one parameter: the rows travel as one JSON array that
 * PostgreSQL expands with `jsonb_populate_recordset`. Knex's multi-row insert binds every cell (an
 * audit trail of 6,000 rows is 90,000 parameters, in slices under the 65,535 limit) and spends more CPU
 * building that statement than the database spends running it (621 FHIR import items: about 35 ms of
 * the service's CPU that way, 3–13 ms this way; bench/README.md).
 *
 * All rows must have the same members, named as the table's columns; columns left out take their
 * defaults. A jsonb column takes the value itself, not its JSON text. Text is stored exactly as a bound
 * parameter would store it: a lone surrogate becomes U+FFFD in both. `tail` (constant SQL: an
 * `on conflict` or `returning` clause) ends the statement; the rows it returns are returned.
 */
export async function insertRows(db: Knex, table: string, rows: Record<string, unknown>[], tail = ''): Promise<Record<string, any>[]> {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]).map((c) => `"${c.replace(/"/g, '""')}"`).join(', ');
  const { rows: returned } = await db.raw(`insert into ?? (${columns}) select ${columns} from jsonb_populate_recordset(null::??, ?::jsonb) ${tail}`, [table, table, jsonParameter(rows)]);
  return returned;
}

/**
 * A value as the JSON text of a `json` or `jsonb` parameter, its text stored exactly as a bound text
 * parameter would store it: a lone surrogate becomes U+FFFD.
 */
export function jsonParameter(value: unknown): string {
  const json = JSON.stringify(value);
  // JSON.stringify writes a lone surrogate as a \udXXX escape, which jsonb refuses: only then is every string
  // mended, so the common case pays one scan of the text rather than a call per value.
  if (!LONE_SURROGATE_ESCAPE.test(json)) return json;
  return JSON.stringify(value, (_key, member: unknown) => (typeof member === 'string' ? (member as WellFormable).toWellFormed() : member));
}
