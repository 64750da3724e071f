import type { Knex } from 'knex';

/** Polls `check` until it holds; fails after `ms` naming what it waited for. */
export async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The connections a service process holds, by its application name `sdx-<pid>-…` (src/db/knex.ts). */
const ofProcess = (pid: number) => `sdx-${pid}-%`;

/**
 * Whether a service process waits for a lock in a statement that `statement` matches (any, when left
 * out), in a transaction that has already written (it has a transaction id): a test holding that lock
 * stops a request right there.
 */
export async function blockedIn(knex: Knex, pid: number, statement = /(?:)/): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { query: string }[] }>(
    "select query from pg_stat_activity where application_name like ? and wait_event_type = 'Lock' and backend_xid is not null", [ofProcess(pid)],
  );
  return rows.some((r) => statement.test(r.query));
}

/** How many connections a service process still holds. */
export async function connectionsOf(knex: Knex, pid: number): Promise<number> {
  const { rows: [counted] } = await knex.raw<{ rows: [{ n: number }] }>('select count(*)::int as n from pg_stat_activity where application_name like ?', [ofProcess(pid)]);
  return counted.n;
}
