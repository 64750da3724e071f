// Why: staff people and their study roles decide who may make API keys, what a key may see, and who confirms FHIR imports.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.increments('id');
    t.text('email').notNullable();
    t.text('name').notNullable();
    t.text('password_hash');
    t.integer('failed_sign_ins').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create unique index users_email_unique on users (lower(email))');
  await knex.schema.createTable('study_roles', (t) => {
    t.increments('id');
    t.integer('study_id').notNullable().references('studies.id').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('role', 16).notNullable();
    t.boolean('can_export').notNullable().defaultTo(false);
    t.boolean('unblinded').notNullable().defaultTo(false);
    // True: every site of the study, present and future; false: the sites in study_role_sites.
    t.boolean('all_sites').notNullable().defaultTo(true);
    t.timestamp('granted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['study_id', 'user_id', 'role']);
  });
  await knex.raw("alter table study_roles add constraint study_roles_role_check check (role in ('manager', 'site_staff'))");
  await knex.schema.createTable('study_role_sites', (t) => {
    t.integer('study_role_id').notNullable().references('study_roles.id').onDelete('CASCADE');
    t.integer('site_id').notNullable().references('sites.id').onDelete('CASCADE');
    t.primary(['study_role_id', 'site_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('study_role_sites');
  await knex.schema.dropTable('study_roles');
  await knex.schema.dropTable('users');
}
