/**
 * A key stopped by its maker's loss of the manager role or of the export right stays stopped (interface
 * description, "States and transitions: API key": `stopped` has no way out). Giving the role or the right back
 * does not restart it: the manager makes a new key. Roles change through the real command line (`sdx role`).
 */
import { expect } from 'chai';
import type { Problem } from '../helpers/answerTypes.js';
import { addPerson, makeKey } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { present } from '../helpers/only.js';
import { sdx } from '../helpers/sdxCli.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** What `sdx key list --json` prints for one key (the members read here). */
interface ListedKey { id: number; name: string; state: string; why: string | null }

/** The audit rows these tests read. */
interface AuditRow { action: string; author: string; actor_type: string; actor_id: number | null; reason: string; details: Record<string, unknown> }

/** The row of the portal's keys table for a key id, as text without tags. */
function keyRow(page: PortalReply, id: number): string {
  const row = new RegExp(`<tr data-key-id="${id}"[^>]*>([\\s\\S]*?)</tr>`).exec(page.html);
  expect(row, `key ${id} is in the keys table`).to.not.equal(null);
  return present(row?.[1], `the row of key ${id}`).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

describe('API keys stopped by a role change stay stopped', () => {
  const { app, world } = useStudyWorld();
  let portal: PortalClient;

  before(async () => {
    await addStaff(app.db.knex, 'keys-page@sdx.test', { study: world.code, role: 'manager', canExport: true });
    portal = new PortalClient(app.baseUrl);
    expect((await portal.signIn('keys-page@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  const design = (key: string) => app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { key });
  const queries = (key: string) => app.call<Problem>('GET', `/api/v1/studies/${world.code}/queries`, { key });
  const listed = async (id: number) => present(
    (await sdx<{ keys: ListedKey[] }>('key', 'list', world.code)).keys.find((k) => k.id === id), `key ${id} in sdx key list`,
  );
  const stopRows = (id: number) => app.db.knex<AuditRow>('audit_events').where({ action: 'api_key.stopped' })
    .whereRaw(`details->>'key_id' = ?`, [String(id)]).orderBy('id');

  it('a key stopped by taking the manager role stays stopped when the role is given back: 401, listed as stopped', async () => {
    await addPerson(app.db.knex, world.code, 'rejoins@sdx.test', { role: 'manager', canExport: true });
    const made = await makeKey(app.db.knex, { study: world.code, by: 'rejoins@sdx.test', name: 'Forgotten key' });
    expect((await design(made.key)).status).to.equal(200);

    await sdx('role', 'revoke', world.code, '--email', 'rejoins@sdx.test', '--role', 'manager');
    expect((await design(made.key)).body.code).to.equal('key_stopped');
    await sdx('role', 'grant', world.code, '--email', 'rejoins@sdx.test', '--role', 'manager', '--export', '--unblinded');

    const after = await design(made.key);
    expect(after.status).to.equal(401);
    expect(after.body).to.include({ code: 'key_stopped', detail: 'This API key no longer works: the manager who made it is no longer a manager of the study.' });
    expect(after.headers.get('www-authenticate')).to.match(/^Bearer\b/);
    expect(await listed(made.id)).to.include({ state: 'stopped', why: 'maker_not_manager' });
    expect(keyRow(await portal.get(`/p/${world.code}/api`), made.id)).to.include('stopped').and.include('its maker is no longer a manager');
    // The manager back in the study makes a new key, which works.
    const fresh = await makeKey(app.db.knex, { study: world.code, by: 'rejoins@sdx.test', name: 'New key' });
    expect((await design(fresh.key)).status).to.equal(200);
  });

  it('a read key stopped by taking the export right stays stopped when the right is given back; a write key of the same maker keeps working', async () => {
    await addPerson(app.db.knex, world.code, 'export-back@sdx.test', { role: 'manager', canExport: true });
    const reader = await makeKey(app.db.knex, { study: world.code, by: 'export-back@sdx.test', name: 'Reader', canWrite: false, canEnrol: false });
    const writer = await makeKey(app.db.knex, { study: world.code, by: 'export-back@sdx.test', name: 'Writer', canRead: false, canEnrol: false });
    expect((await queries(reader.key)).status).to.equal(200);

    await sdx('role', 'revoke', world.code, '--email', 'export-back@sdx.test', '--export');
    expect((await queries(reader.key)).body.code).to.equal('key_stopped');
    expect((await design(writer.key)).status).to.equal(200);
    await sdx('role', 'grant', world.code, '--email', 'export-back@sdx.test', '--role', 'manager', '--export');

    const after = await queries(reader.key);
    expect(after.status).to.equal(401);
    expect(after.body).to.include({ code: 'key_stopped', detail: 'This read key no longer works: the manager who made it may no longer export data.' });
    expect(await listed(reader.id)).to.include({ state: 'stopped', why: 'maker_lost_export' });
    expect(keyRow(await portal.get(`/p/${world.code}/api`), reader.id)).to.include('its maker may no longer export');
    expect((await design(writer.key)).status).to.equal(200);
    expect(await listed(writer.id)).to.include({ state: 'active', why: null });
    expect(await stopRows(writer.id)).to.deep.equal([]);
  });

  it('a grant that leaves out the export right takes it, and stops the read keys for good as well', async () => {
    await addPerson(app.db.knex, world.code, 'regranted@sdx.test', { role: 'manager', canExport: true });
    const reader = await makeKey(app.db.knex, { study: world.code, by: 'regranted@sdx.test', name: 'Reader of a regrant', canWrite: false, canEnrol: false });
    // `role grant` sets the rights exactly as given: without --export, the export right is taken.
    await sdx('role', 'grant', world.code, '--email', 'regranted@sdx.test', '--role', 'manager');
    expect((await queries(reader.key)).body.code).to.equal('key_stopped');
    await sdx('role', 'grant', world.code, '--email', 'regranted@sdx.test', '--role', 'manager', '--export');
    expect((await queries(reader.key)).body.code).to.equal('key_stopped');
    expect(await listed(reader.id)).to.include({ state: 'stopped', why: 'maker_lost_export' });
  });

  it('writes one audit row per key it stops, with whoever changed the role as author; none for a key already revoked', async () => {
    await addPerson(app.db.knex, world.code, 'leaves@sdx.test', { role: 'manager', canExport: true });
    const first = await makeKey(app.db.knex, { study: world.code, by: 'leaves@sdx.test', name: 'First system' });
    const second = await makeKey(app.db.knex, { study: world.code, by: 'leaves@sdx.test', name: 'Second system', canRead: false });
    const revoked = await makeKey(app.db.knex, { study: world.code, by: 'leaves@sdx.test', name: 'Revoked system' });
    await sdx('key', 'revoke', world.code, String(revoked.id), '--by', world.manager);

    await sdx('role', 'revoke', world.code, '--email', 'leaves@sdx.test');
    for (const [key, name] of [[first, 'First system'], [second, 'Second system']] as const) {
      const rows = await stopRows(key.id);
      expect(rows).to.have.length(1);
      expect(present(rows[0], 'the stop row').author).to.match(/ \(command line\)$/);
      expect(present(rows[0], 'the stop row')).to.deep.include({
        actor_type: 'operator', actor_id: null, details: { key_id: key.id, name, why: 'maker_not_manager' },
      });
    }
    expect(await stopRows(revoked.id)).to.deep.equal([]);
    // Giving the role back and taking it again stops nothing twice.
    await sdx('role', 'grant', world.code, '--email', 'leaves@sdx.test', '--role', 'manager', '--export');
    await sdx('role', 'revoke', world.code, '--email', 'leaves@sdx.test');
    expect(await stopRows(first.id)).to.have.length(1);
    expect(await listed(revoked.id)).to.include({ state: 'revoked' });
  });
});
