import { expect } from 'chai';
import type { Knex } from 'knex';
import type { Database } from '../../src/db/knex.js';
import { createStudyWorld } from '../helpers/factories.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * Least privilege (src/db/roles.ts), on whichever database the suite runs: the embedded server, or
 * TEST_DATABASE_URL's. The test app's pool is opened exactly as the service opens its own.
 */

/** The statement's failure, or a failure of the test when it succeeds. */
async function refusal(knex: Knex, sql: string): Promise<{ code: string; message: string }> {
  const error = await knex.raw(sql).then(() => undefined, (e: { code: string; message: string }) => e);
  expect(error, `${sql} must fail`).to.not.equal(undefined);
  return error!;
}

describe('least privilege in the database', () => {
  let app: TestApp;
  let owner: Database;

  before(async () => {
    app = await startTestApp();
    owner = await testOwnerDatabase();
    await resetDatabase(app.db.knex);
    // Audit rows to refuse to change: loading a study and making a key write some.
    await createStudyWorld(app.db.knex);
    expect(Number((await app.db.knex('audit_events').count({ n: '*' }))[0].n)).to.be.greaterThan(0);
  });
  after(async () => {
    await app?.close();
  });

  it('serves requests as a role that is no superuser, owns nothing and cannot change the schema', async () => {
    const { rows: [me] } = await app.db.knex.raw(`select current_user as name, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
        (select pg_get_userbyid(relowner) from pg_class where oid = 'audit_events'::regclass) as audit_owner,
        (select count(*)::int from pg_class where relowner = r.oid) as owned
      from pg_roles r where r.rolname = current_user`);
    const { rows: [ownerRole] } = await owner.knex.raw('select current_user as name');
    expect(me).to.deep.include({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false, owned: 0 });
    expect(me.audit_owner).to.equal(ownerRole.name);
    expect(me.name).to.not.equal(ownerRole.name);
    const { rows: [membership] } = await app.db.knex.raw('select pg_has_role(current_user, ?, \'MEMBER\') as member', [ownerRole.name]);
    expect(membership.member, 'the runtime role may not act as the owner').to.equal(false);

    expect((await refusal(app.db.knex, 'create table intruder (id int)')).code).to.equal('42501');
    expect((await refusal(app.db.knex, 'alter table audit_events disable trigger audit_events_append_only')).code).to.equal('42501');
    expect((await refusal(app.db.knex, 'drop table audit_events')).code).to.equal('42501');
  });

  it('lets the runtime role only read and insert into the audit trail: TRUNCATE, UPDATE and DELETE are not granted', async () => {
    for (const sql of ['truncate audit_events', 'update audit_events set author = \'someone else\'', 'delete from audit_events']) {
      const error = await refusal(app.db.knex, sql);
      expect(error.code, sql).to.equal('42501');
      expect(error.message, sql).to.match(/permission denied for table audit_events/);
    }
    const { rows } = await app.db.knex.raw(`select privilege_type from information_schema.role_table_grants
      where table_name = 'audit_events' and grantee = current_user order by 1`);
    expect(rows.map((r: { privilege_type: string }) => r.privilege_type)).to.deep.equal(['INSERT', 'SELECT']);
  });

  it('refuses TRUNCATE, UPDATE and DELETE of the audit trail to its owner too, by trigger', async () => {
    for (const [sql, operation] of [['truncate audit_events', 'TRUNCATE'], ['update audit_events set author = \'someone else\'', 'UPDATE'], ['delete from audit_events', 'DELETE']]) {
      const error = await refusal(owner.knex, sql);
      expect(error.message, sql).to.include(`audit_events is append-only: ${operation} refused`);
    }
    expect(Number((await app.db.knex('audit_events').count({ n: '*' }))[0].n)).to.be.greaterThan(0);
  });
});
