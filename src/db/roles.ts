import crypto from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';

/**
 * The two database roles of least privilege: the owner, which owns the schema and runs migrations,
 * and the runtime role the service serves requests with, which may read and write the data but not
 * change the schema, and may only insert into and read the audit trail.
 */
export interface DatabaseRoles {
  owner: string;
  runtime: string;
}

/** PostgreSQL cuts identifiers at 63 bytes. */
const MAX_IDENTIFIER = 63;

/**
 * Roles are cluster-wide while databases are not: naming them after their database keeps the roles
 * of two databases on one server (several checkouts, CI runs, engineers on one shared server) apart.
 * A name too long for the suffix keeps a hash of the whole, so two long names still differ.
 */
export function rolesFor(database: string): DatabaseRoles {
  const longest = Math.max('_owner'.length, '_runtime'.length);
  const base = database.length + longest <= MAX_IDENTIFIER
    ? database
    : `${database.slice(0, MAX_IDENTIFIER - longest - 9)}_${crypto.createHash('sha256').update(database).digest('hex').slice(0, 8)}`;
  return { owner: `${base}_owner`, runtime: `${base}_runtime` };
}

/** Processes that start together change the same catalog rows; concurrent GRANTs would fail with "tuple concurrently updated". */
const LOCK = "select pg_advisory_xact_lock(hashtext('sdx-database-roles'))";

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates the two roles of `database` (if missing) and hands the database and its schema to the
 * owner; run by a superuser: the embedded server's start, the test suite's set-up. Objects an
 * earlier version created as the superuser are given to the owner, so that migrations can alter
 * them. Safe to run by several processes at once.
 */
export async function provisionRoles(adminUrl: string, database: string): Promise<DatabaseRoles> {
  const roles = rolesFor(database);
  const server = new pg.Client({ connectionString: withDatabase(adminUrl, 'postgres') });
  await server.connect();
  try {
    await server.query('begin');
    await server.query(LOCK);
    for (const role of [roles.owner, roles.runtime]) {
      // A concurrent creation fails with duplicate_object or with a unique violation on pg_authid.
      await server.query(`do $$ begin
          create role ${quote(role)} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls;
        exception when duplicate_object or unique_violation then null;
        end $$`);
    }
    await server.query(`alter database ${quote(database)} owner to ${quote(roles.owner)}`);
    // Other roles of a shared server have no business in this database.
    await server.query(`revoke connect, temporary on database ${quote(database)} from public`);
    await server.query(`grant connect on database ${quote(database)} to ${quote(roles.runtime)}`);
    await server.query('commit');
  } finally {
    await server.end();
  }
  const inside = new pg.Client({ connectionString: withDatabase(adminUrl, database) });
  await inside.connect();
  try {
    await inside.query('begin');
    await inside.query(LOCK);
    await inside.query(`alter schema public owner to ${quote(roles.owner)}`);
    await inside.query(`do $$ declare o record; begin
        for o in select c.relname, c.relkind from pg_class c
          where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
            and c.relowner <> ${pgLiteral(roles.owner)}::regrole
        loop
          execute format('alter table %I owner to %I', o.relname, ${pgLiteral(roles.owner)});
        end loop;
        for o in select p.oid::regprocedure::text as signature from pg_proc p
          where p.pronamespace = 'public'::regnamespace and p.proowner <> ${pgLiteral(roles.owner)}::regrole
        loop
          execute format('alter function %s owner to %I', o.signature, ${pgLiteral(roles.owner)});
        end loop;
      end $$`);
    await inside.query('commit');
  } finally {
    await inside.end();
  }
  return roles;
}

function pgLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** The connection string with another database name (works for TCP and Unix-socket addresses alike). */
export function withDatabase(url: string, database: string): string {
  const at = url.search(/\/[^/]*(\?.*)?$/);
  const query = url.slice(at).match(/\?.*$/)?.[0] ?? '';
  return `${url.slice(0, at)}/${encodeURIComponent(database)}${query}`;
}

/** The connection string with another user and no password (the embedded server trusts its private socket). */
export function withUser(url: string, user: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/)(?:[^@/]*@)?/, `$1${encodeURIComponent(user)}@`);
}

/**
 * The tables the service only ever appends to, and the runtime role may only read and insert into: the
 * audit trail; the read log, which says who read which data; and the removals, which tell incremental
 * readers whose data they must delete (and whose count marks the read-ahead stale, src/db/readAhead.ts).
 */
const APPEND_ONLY = ['audit_events', 'read_log', 'removals'];

/**
 * Gives the runtime role what serving requests needs, as the owner after each migration: read and
 * write every table and use its sequences, but only read and insert into the append-only tables, and only
 * read the migrations' bookkeeping (to check the schema is current). Default privileges cover the
 * tables of later migrations even when they are run by other means.
 */
export async function grantRuntimeAccess(owner: Knex, runtime: string): Promise<void> {
  const role = quote(runtime);
  await owner.transaction(async (trx) => {
    await trx.raw(LOCK);
    await trx.raw(`grant usage on schema public to ${role}`);
    await trx.raw(`grant select, insert, update, delete on all tables in schema public to ${role}`);
    await trx.raw(`grant usage, select on all sequences in schema public to ${role}`);
    await trx.raw(`alter default privileges in schema public grant select, insert, update, delete on tables to ${role}`);
    await trx.raw(`alter default privileges in schema public grant usage, select on sequences to ${role}`);
    await trx.raw(`revoke update, delete, truncate, references, trigger on ${APPEND_ONLY.join(', ')} from ${role}`);
    await trx.raw(`revoke all on knex_migrations, knex_migrations_lock from ${role}`);
    await trx.raw(`grant select on knex_migrations, knex_migrations_lock to ${role}`);
  });
}
