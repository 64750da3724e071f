// Why: the rate limit counts over a sliding minute (issue 21.8): each key keeps the instants of the requests it was let through in the last minute.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table rate_limits add column hits bigint[] not null default '{}'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table rate_limits drop column hits');
}
