import { expect } from 'chai';
import type { Knex } from 'knex';
import type { Database } from '../../src/db/knex.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * Least privilege (src/db/roles.ts), on whichever database the suite runs: the embedded server, or
 * TEST_DATABASE_URL's. The test app's pool is opened exactly as the service opens its own.
 */

/** The statement's failure, or a failure of the test when it succeeds. */
async function refusal(knex: Knex, sql: string): Promise<{ code: string; message: string }> {
  const error = await knex.raw(sql).then(() => undefined, (e: { code: string; message: string }) => e);
  expect(error, `${sql} must fail`).to.not.equal(undefined);
  return present(error, `the failure of ${sql}`);
}

/** The number of rows in the audit trail. */
const auditRows = async (knex: Knex) => Number(at(await knex('audit_events').count<{ n: string }[]>({ n: '*' }), 0).n);

describe('least privilege in the database', () => {
  // Audit rows to refuse to change: loading the world's study and making its key write some.
  const { app } = useStudyWorld();
  let owner: Database;

  before(async () => {
    owner = await testOwnerDatabase();
    expect(await auditRows(app.db.knex)).to.be.greaterThan(0);
  });

  it('serves requests as a role that is no superuser, owns nothing and cannot change the schema', async () => {
    const { rows: [me] } = await app.db.knex.raw<{ rows: { name: string; audit_owner: string }[] }>(`select current_user as name, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
        (select pg_get_userbyid(relowner) from pg_class where oid = 'audit_events'::regclass) as audit_owner,
        (select count(*)::int from pg_class where relowner = r.oid) as owned
      from pg_roles r where r.rolname = current_user`);
    const { rows: [ownerRole] } = await owner.knex.raw<{ rows: { name: string }[] }>('select current_user as name');
    expect(me).to.deep.include({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false, owned: 0 });
    expect(me?.audit_owner).to.equal(ownerRole?.name);
    expect(me?.name).to.not.equal(ownerRole?.name);
    const { rows: [membership] } = await app.db.knex.raw<{ rows: { member: boolean }[] }>('select pg_has_role(current_user, ?, \'MEMBER\') as member', [present(ownerRole, 'the owner role').name]);
    expect(membership?.member, 'the runtime role may not act as the owner').to.equal(false);

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
    const { rows } = await app.db.knex.raw<{ rows: { privilege_type: string }[] }>(`select privilege_type from information_schema.role_table_grants
      where table_name = 'audit_events' and grantee = current_user order by 1`);
    expect(rows.map((r) => r.privilege_type)).to.deep.equal(['INSERT', 'SELECT']);
  });

  it('lets the runtime role only read and insert into the read log and the removals, which no request changes', async () => {
    for (const table of ['read_log', 'removals']) {
      for (const sql of [`truncate ${table}`, `update ${table} set study_id = study_id`, `delete from ${table}`]) {
        const error = await refusal(app.db.knex, sql);
        expect(error.code, sql).to.equal('42501');
        expect(error.message, sql).to.include(`permission denied for table ${table}`);
      }
      const { rows } = await app.db.knex.raw<{ rows: { privilege_type: string }[] }>(`select privilege_type from information_schema.role_table_grants
        where table_name = ? and grantee = current_user order by 1`, [table]);
      expect(rows.map((r) => r.privilege_type), table).to.deep.equal(['INSERT', 'SELECT']);
    }
  });

  it('refuses TRUNCATE, UPDATE and DELETE of the audit trail to its owner too, by trigger', async () => {
    for (const [sql, operation] of [['truncate audit_events', 'TRUNCATE'], ['update audit_events set author = \'someone else\'', 'UPDATE'], ['delete from audit_events', 'DELETE']] as const) {
      const error = await refusal(owner.knex, sql);
      expect(error.message, sql).to.include(`audit_events is append-only: ${operation} refused`);
    }
    expect(await auditRows(app.db.knex)).to.be.greaterThan(0);
  });
});
