import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { at, present } from '../helpers/only.js';
import { sdx, sdxText } from '../helpers/sdxCli.js';
import { resetDatabase, testDatabase, testEnv } from '../helpers/testDatabase.js';

const run = promisify(execFile);

/** What `sdx key list --json` prints, with the members these tests read. */
interface KeyList { keys: { id: number; name: string; state: string }[] }
/** What `sdx demo --json` prints, with the member these tests read. */
interface Demo { key: string }

describe('sdx demo (what `make run` does before it starts the service)', () => {
  before(async () => {
    await resetDatabase((await testDatabase()).knex);
  });

  it('makes a fresh demo key at every start and revokes the one before, through the audited revocation', async () => {
    const first = await sdx<Demo>('demo');
    const second = await sdx<Demo>('demo');
    expect(second.key).to.not.equal(first.key);
    const { keys } = await sdx<KeyList>('key', 'list', 'DEMO');
    expect(keys.map((k) => `${k.name}: ${k.state}`).sort()).to.deep.equal(['Demo LIMS: active', 'Demo LIMS: revoked']);
    const knex = (await testDatabase()).knex;
    const revoked = await knex('audit_events').where({ action: 'api_key.revoked' }).select<{ author: string; details: object }[]>('author', 'details');
    expect(revoked).to.deep.equal([{ author: 'Dana Manager', details: { key_id: keys.find((k) => k.state === 'revoked')?.id, name: 'Demo LIMS' } }]);

    // A third start still leaves exactly one live demo key.
    await sdx('demo');
    const after = (await sdx<KeyList>('key', 'list', 'DEMO')).keys;
    expect(after.filter((k) => k.state === 'active')).to.have.length(1);
    expect(after).to.have.length(3);
  });

  it('`sdx key list` prints a table for people (a header, one aligned line a key) and the same keys as JSON with --json', async () => {
    const { keys } = await sdx<KeyList>('key', 'list', 'DEMO');
    const lines = (await sdxText('key', 'list', 'DEMO')).trimEnd().split('\n');
    expect(lines.slice(0, 3)).to.deep.equal(['study: DEMO', '', `keys (${keys.length}):`]);
    const [header, ...rows] = [present(lines[3], 'the table\'s header'), ...lines.slice(4)];
    expect(header).to.match(/^id +name +hint +state +why +rights +sites +term_days +created_at +created_by +expires_at +revoked_at +last_used_at +requests +rows_read$/);
    expect(rows).to.have.length(keys.length);
    // Every column starts where its header does.
    const stateAt = header.indexOf('state');
    for (const [i, row] of rows.entries()) expect(row.slice(stateAt).split(' ')[0]).to.equal(at(keys, i).state);
    expect(at(rows, 0).startsWith(`${at(keys, 0).id} `)).to.equal(true);
  });

  it('prints the study, the key, the people and where to start, as `make run` shows them', async () => {
    const { stdout } = await run('bash', ['-c', 'set -o pipefail; node bin/sdx.js demo --json | node --import tsx scripts/printDemo.ts'], { env: { ...process.env, ...testEnv } });
    const key = /Demo API key \(shown once\): (sdx_\S+)/.exec(stdout)?.[1];
    expect(key, stdout).to.be.a('string');
    expect(stdout).to.contain('Demo study DEMO is loaded.')
      .and.contain(`Try: curl -H "Authorization: Bearer ${key}" `)
      .and.contain('People: manager@demo.test / demo-manager-1, site01@demo.test / demo-site01-1')
      .and.match(/Staff portal: sign in as one of them at \S+\/portal\/sign-in/);
  });
});
