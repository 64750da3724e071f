import type { Knex } from 'knex';

export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

const SERIALIZATION_FAILURE = '40001';
const DEADLOCK = '40P01';

/**
 * Registers work to run as the last step of the transaction, right before its commit: what `withTransaction`
 * hands its use case beside the transaction, so that work bound to the commit goes with the transaction itself.
 */
export type BeforeCommit = (step: () => Promise<void>) => void;

/**
 * Runs one use case in one transaction. Serialization failures and deadlocks, which PostgreSQL
 * resolves by aborting one of the contenders, are retried a few times: the caller sees either
 * the whole effect once or an error, never half of it. The steps registered through `beforeCommit`
 * run, in order, after the use case and before the commit.
 */
export async function withTransaction<T>(
  knex: Knex,
  fn: (trx: Knex.Transaction, beforeCommit: BeforeCommit) => Promise<T>,
  options: { isolationLevel?: IsolationLevel; attempts?: number } = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      return await knex.transaction(async (trx) => {
        const steps: (() => Promise<void>)[] = [];
        const result = await fn(trx, (step) => steps.push(step));
        for (const step of steps) await step();
        return result;
      }, options.isolationLevel ? { isolationLevel: options.isolationLevel } : undefined);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= attempts || (code !== SERIALIZATION_FAILURE && code !== DEADLOCK)) throw error;
      await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20));
    }
  }
}
