// Why: a query carries a thread of answers from the site, through the portal or an API key (issue 22.2).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('query_answers', (t) => {
    t.bigIncrements('id');
    t.bigInteger('query_id').notNullable().references('queries.id');
    t.text('text').notNullable();
    t.string('author_type', 16).notNullable();
    t.integer('author_id');
    // The author's name as it was when answering ("<key name> (API)" for a key), as the audit trail keeps it.
    t.text('author').notNullable();
    t.timestamp('answered_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // The read calls gather each query's thread by this index, in answer order.
    t.index(['query_id', 'id']);
  });
  await knex.raw("alter table query_answers add constraint query_answers_author_type_check check (author_type in ('user', 'api_key', 'operator'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('query_answers');
}
