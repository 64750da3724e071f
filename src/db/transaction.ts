import type { Knex } from 'knex';

export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

const SERIALIZATION_FAILURE = '40001';
const DEADLOCK = '40P01';

const commitHooks = new WeakMap<Knex, (() => Promise<void>)[]>();

/**
 * Registers work to run as the last step of a transaction opened by `withTransaction`, right before
 * its commit. Refused for any other transaction, so such work can never be silently dropped.
 */
export function beforeCommit(trx: Knex, hook: () => Promise<void>): void {
  const hooks = commitHooks.get(trx);
  if (!hooks) throw new Error('beforeCommit needs a transaction opened by withTransaction');
  hooks.push(hook);
}

/**
 * Runs one use case in one transaction. Serialization failures and deadlocks, which PostgreSQL
 * resolves by aborting one of the contenders, are retried a few times: the caller sees either
 * the whole effect once or an error, never half of it.
 */
export async function withTransaction<T>(
  knex: Knex,
  fn: (trx: Knex.Transaction) => Promise<T>,
  options: { isolationLevel?: IsolationLevel; attempts?: number } = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      return await knex.transaction(async (trx) => {
        const hooks: (() => Promise<void>)[] = [];
        commitHooks.set(trx, hooks);
        const result = await fn(trx);
        for (const hook of hooks) await hook();
        return result;
      }, options.isolationLevel ? { isolationLevel: options.isolationLevel } : undefined);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= attempts || (code !== SERIALIZATION_FAILURE && code !== DEADLOCK)) throw error;
      await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20));
    }
  }
}
