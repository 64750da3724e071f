import { expect } from 'chai';
import type { Knex } from 'knex';
import { fingerprintOf } from '../../src/domain/apiKeys/keyValue.js';
import { keyStateOf } from '../../src/domain/apiKeys/keyState.js';
import { rateDecision } from '../../src/domain/apiKeys/rateWindow.js';
import { findKeysForRequests } from '../../src/db/apiKeys.js';
import { takeBackCounts } from '../../src/db/rateLimits.js';
import { authenticateRequest } from '../../src/domain/apiKeys/admission.js';
import type { DomainError } from '../../src/domain/errors.js';
import { createKeyLookup } from '../../src/db/keyLookup.js';
import { insertRows } from '../../src/db/insertRows.js';
import { openDatabase, type Database } from '../../src/db/knex.js';
import { createStores } from '../../src/db/stores.js';
import { addPerson, createStudyWorld, demoDesign, makeKey, type StudyWorld } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { resetDatabase, testConfig, testDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * The statements that every API request runs, merged or prepared for speed (bench/README.md): they
 * must answer exactly what the separate statements they replace answered.
 */
describe('the request path on PostgreSQL: key lookup, rate window, bulk inserts', () => {
  let db: Database;
  let world: StudyWorld;
  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    world = await createStudyWorld(db.knex);
    await createStudyWorld(db.knex, demoDesign('OTHER'));
  });

  /** The rate window of a key as stored (hits as bigint text). */
  interface KeyHits { hits: string[] }
  interface KeyCount { request_count: number; last_used_at: Date | null }

  describe('findKeysForRequests', () => {
    const findKeyForRequest = async (knex: Database['knex'], fingerprint: Buffer, limit = 600) => (await findKeysForRequests(knex, [{ fingerprint, at: new Date() }], limit))[0];
    const countRequest = async (knex: Database['knex'], key: { key: string }, limit = 600) => (await findKeyForRequest(knex, fingerprintOf(key.key), limit))!.window;
    const usage = async (key: { id: number }) => ({
      ...present(await db.knex('api_keys').where({ id: key.id }).first<{ request_count: number; last_used_at: string | null } | undefined>(
        'request_count', db.knex.raw('last_used_at::text as last_used_at')), `key ${key.id}`),
      hits: (await db.knex('rate_limits').where({ key: `key:${key.id}` }).first<KeyHits | undefined>('hits'))?.hits.map(Number),
    });

    it('returns the key as findByFingerprint does, its study as findByCode does and the sites and ids of the study as the study store reads them, also the second time (design from memory)', async () => {
      const stores = createStores(db.knex);
      const fingerprint = fingerprintOf(world.key);
      const study = await stores.studies.findByCode('DEMO');
      for (let i = 0; i < 2; i++) {
        // The key as it was found, before the statement counted the request.
        const stored = await stores.apiKeys.findByFingerprint(fingerprint);
        const found = await findKeyForRequest(db.knex, fingerprint);
        expect(found!.key).to.deep.equal(stored);
        const { structure, ...row } = found!.study;
        expect(row).to.deep.equal(study);
        // The structure it carries is what the study store reads with its own queries.
        expect(structure!.sites).to.deep.equal(await stores.studies.sites(study!));
        expect(structure!.ids).to.deep.equal(await stores.studies.designIds(study!));
      }
    });

    it('gives each key its own study, and nothing for an unknown fingerprint', async () => {
      const other = present(await db.knex('api_keys as k').join('studies as s', 's.id', 'k.study_id').where('s.code', 'OTHER').first<{ fingerprint: Buffer } | undefined>('k.fingerprint'), 'the key of OTHER');
      const found = await findKeyForRequest(db.knex, other.fingerprint);
      expect(found!.study.code).to.equal('OTHER');
      expect(found!.key.studyCode).to.equal('OTHER');
      expect(await findKeyForRequest(db.knex, fingerprintOf('sdx_nothing'))).to.equal(undefined);
    });

    it('hands out a frozen design, so no request can change what the next one reads', async () => {
      const { study } = (await findKeyForRequest(db.knex, fingerprintOf(world.key)))!;
      expect(Object.isFrozen(study.design)).to.equal(true);
      expect(Object.isFrozen(study.design.forms[0]?.fields[0])).to.equal(true);
      expect(() => study.design.forms.push(at(study.design.forms, 0, 'the forms'))).to.throw(TypeError);
    });

    it('counts each request in the key\'s minute and in the key, lets none past the limit take a place, and frees a place once a minute old', async () => {
      const counted = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Counted' });
      const { id } = counted;
      const windows = [];
      for (let i = 0; i < 4; i++) windows.push(await countRequest(db.knex, counted, 3));
      expect(windows.map((w) => w.points)).to.deep.equal([1, 2, 3, 4]);
      expect(windows.map((w) => rateDecision(w, 3)).map((d) => [d.allowed, d.limit, d.remaining])).to.deep.equal([[true, 3, 2], [true, 3, 1], [true, 3, 0], [false, 3, 0]]);
      for (const w of windows) expect(rateDecision(w, 3).resetSeconds).to.be.within(1, 60);
      const after = present(await db.knex('api_keys').where({ id }).first<KeyCount | undefined>('request_count', 'last_used_at'), `key ${id}`);
      expect(after.request_count).to.equal(4);
      expect(after.last_used_at).to.be.instanceOf(Date);
      // The refused fourth request took no place in the minute.
      const { hits } = present(await db.knex('rate_limits').where({ key: `key:${id}` }).first<KeyHits | undefined>('hits'), `the rate window of key ${id}`);
      expect(hits).to.have.length(3);

      // Test set-up: the first request let through is now a minute old, the others are not.
      await db.knex.raw(`update rate_limits set hits[1] = hits[1] - 60000 where key = ?`, [`key:${id}`]);
      expect(rateDecision(await countRequest(db.knex, counted, 3), 3)).to.deep.include({ allowed: true, remaining: 0 });
      expect(rateDecision(await countRequest(db.knex, counted, 3), 3)).to.deep.include({ allowed: false, remaining: 0 });
    });

    it('lets at most the limit through in any 60 seconds, across what was a fixed window\'s edge (issue 21.8)', async () => {
      const { key } = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Double burst' });
      const start = Date.now();
      // One request 57 s before a burst of 1,200 in 6.6 s (in batches of 10), then 300 more a minute later:
      // a fixed window opened by the first would have let 1,199 of the burst through. Instants chosen by the test.
      const tens = (instants: number[]) => Array.from({ length: instants.length / 10 }, (_, i) => instants.slice(i * 10, i * 10 + 10));
      const batches = [[start - 57_000], ...tens(Array.from({ length: 1200 }, (_, i) => start + Math.floor(i * 5.5))), ...tens(Array.from({ length: 300 }, (_, i) => start + 60_000 + i * 10))];
      const passed: number[] = [];
      for (const instants of batches) {
        // A statement counts its batch at the batch's latest instant.
        const found = await findKeysForRequests(db.knex, instants.map((at) => ({ fingerprint: fingerprintOf(key), at: new Date(at) })), 600);
        const at = Math.max(...instants);
        for (const f of found) if (rateDecision(f!.window, 600, at).allowed) passed.push(at);
      }
      // The minute of the first request holds 600; one more once it is a minute old, at 3 s into the burst.
      expect(passed.filter((at) => at <= start + 6600)).to.have.length(601);
      for (const at of passed) expect(passed.filter((other) => other > at - 60_000 && other <= at).length).to.be.at.most(600);
      // A minute after the burst, places free up again as the burst's requests leave the minute.
      expect(passed.filter((at) => at >= start + 60_000).length).to.be.above(0);
    });

    it('authenticates and counts a request exactly when keyStateOf says the key works, in every state and at the expiry instant', async () => {
      const at = new Date(Date.now() + 60_000);
      await addPerson(db.knex, 'DEMO', 'demoted@sdx.test', { role: 'manager', canExport: true });
      await addPerson(db.knex, 'DEMO', 'no-export@sdx.test', { role: 'manager', canExport: true });
      const cases: Record<string, { maker?: string; canRead?: boolean; change?: (id: number) => Promise<void>; state: string }> = {
        active: { state: 'active' },
        revoked: { state: 'revoked', change: (id) => db.knex('api_keys').where({ id }).update({ revoked_at: new Date() }) },
        'expired a millisecond ago': { state: 'expired', change: (id) => db.knex('api_keys').where({ id }).update({ expires_at: new Date(at.getTime() - 1) }) },
        'expiring at this instant': { state: 'expired', change: (id) => db.knex('api_keys').where({ id }).update({ expires_at: at }) },
        // PostgreSQL keeps microseconds, a JavaScript Date milliseconds: 0.5 ms after the instant is still that instant.
        'expiring half a millisecond after it': { state: 'expired', change: (id) => db.knex.raw(`update api_keys set expires_at = ?::timestamptz + interval '500 microseconds' where id = ?`, [at, id]) },
        'expiring a millisecond after it': { state: 'active', change: (id) => db.knex('api_keys').where({ id }).update({ expires_at: new Date(at.getTime() + 1) }) },
        'maker no longer manager': {
          state: 'stopped', maker: 'demoted@sdx.test',
          change: async () => { await db.knex('study_roles').whereIn('user_id', db.knex('users').where({ email: 'demoted@sdx.test' }).select('id')).delete(); },
        },
        'read key of a maker without export': {
          state: 'stopped', maker: 'no-export@sdx.test',
          change: async () => { await db.knex('study_roles').whereIn('user_id', db.knex('users').where({ email: 'no-export@sdx.test' }).select('id')).update({ can_export: false }); },
        },
        'write key of a maker without export': { state: 'active', maker: 'no-export@sdx.test', canRead: false },
      };
      const made = new Map<string, { key: string; id: number }>();
      for (const [name, c] of Object.entries(cases)) made.set(name, await makeKey(db.knex, { study: 'DEMO', by: c.maker ?? world.manager, name, canRead: c.canRead ?? true }));
      for (const [name, c] of Object.entries(cases)) await c.change?.(made.get(name)!.id);

      const gate = createKeyLookup(db.knex, 600);
      for (const [name, c] of Object.entries(cases)) {
        const { key, id } = made.get(name)!;
        const state = keyStateOf((await createStores(db.knex).apiKeys.findByFingerprint(fingerprintOf(key)))!, at).state;
        expect([name, state]).to.deep.equal([name, c.state]);
        const outcome = await authenticateRequest(gate, key, at).then((r) => r.window.points, (e: DomainError) => e.code);
        expect([name, outcome]).to.deep.equal([name, state === 'active' ? 1 : `key_${state}`]);
        const counted = present(await db.knex('api_keys').where({ id }).first<KeyCount | undefined>('request_count', 'last_used_at'), `key ${id}`);
        expect([name, counted.request_count, counted.last_used_at === null]).to.deep.equal([name, state === 'active' ? 1 : 0, state !== 'active']);
        expect([name, (await db.knex('rate_limits').where({ key: `key:${id}` })).length]).to.deep.equal([name, state === 'active' ? 1 : 0]);
      }
    });

    it('finds the keys of one batch each in its place, and counts its requests one after the other, each in its own place', async () => {
      const a = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Batch A' });
      const b = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Batch B' });
      const order = [a, a, undefined, b, a];
      const at = new Date();
      const found = await findKeysForRequests(db.knex, order.map((k) => ({ fingerprint: fingerprintOf(k?.key ?? 'sdx_nothing'), at })), 600);
      expect(found.map((f) => f?.key.name)).to.deep.equal(['Batch A', 'Batch A', undefined, 'Batch B', 'Batch A']);
      expect(found.map((f) => f?.window.points)).to.deep.equal([1, 2, undefined, 1, 3]);
      for (const f of found) if (f) expect(f.window.expire - at.getTime()).to.equal(60_000);
      const counts = await db.knex('api_keys').whereIn('id', [a.id, b.id]).orderBy('id').pluck('request_count');
      expect(counts).to.deep.equal([3, 1]);
      expect((await countRequest(db.knex, a)).points).to.equal(4);
    });

    it('commits its counts without waiting for the WAL flush, and leaves that setting to its own transaction', async () => {
      // A pool of one connection: the statement after the count runs on the connection the count used.
      const one = await openDatabase(testConfig({ DATABASE_URL: db.url }), 1);
      const single = one.knex;
      try {
        const setting = async (knex: Knex) => (await knex.raw<{ rows: [{ mode: string }] }>(`select current_setting('synchronous_commit') as mode`)).rows[0].mode;
        expect(await setting(single)).to.equal('on');
        expect((await countRequest(single, world)).points).to.be.above(0);
        // The one connection of the pool, which clinical writes would use next, commits synchronously again.
        expect(await setting(single)).to.equal('on');
        await single.transaction(async (trx) => {
          await countRequest(trx, world);
          expect(await setting(trx)).to.equal('off');
        });
        // So does taking a count back, in a transaction of its own.
        await takeBackCounts(single, [(await findKeyForRequest(single, fingerprintOf(world.key)))!.receipt]);
        expect(await setting(single)).to.equal('on');
      } finally {
        await one.close();
      }
    });

    it('sends the look-ups with their counts made in one turn of the event loop in one statement, and a later one at once after it', async () => {
      const key = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'One turn' });
      const lookup = createKeyLookup(db.knex, 600);
      const statements: string[] = [];
      const log = (query: { options?: { name?: string } }) => { if (query.options?.name?.startsWith('sdx_')) statements.push(query.options.name); };
      db.knex.on('query', log);
      try {
        const together = await Promise.all(Array.from({ length: 10 }, () => authenticateRequest(lookup, key.key, new Date())));
        expect(together.map((r) => r.window.points)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(statements).to.deep.equal(['sdx_keys_for_requests']);
        expect((await authenticateRequest(lookup, key.key, new Date())).window.points).to.equal(11);
        expect(statements).to.have.length(2);
      } finally {
        db.knex.off('query', log);
      }
    });

    it('takes back a refused request\'s count entirely: counter, time of last use and place in the minute, even with the key busy', async () => {
      const key = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Taken back' });
      // Used while it worked: that count stays.
      await countRequest(db.knex, key);
      const before = await usage(key);
      // Two counts of one batch and one of the next, all refused, taken back together: the time of last use
      // goes back through both counts to the working one.
      const [r1, r2] = await findKeysForRequests(db.knex, [1, 2].map(() => ({ fingerprint: fingerprintOf(key.key), at: new Date() })), 600);
      const r3 = await findKeyForRequest(db.knex, fingerprintOf(key.key));
      expect((await usage(key)).request_count).to.equal(4);
      await takeBackCounts(db.knex, [r1!.receipt, r2!.receipt, r3!.receipt]);
      expect(await usage(key)).to.deep.equal(before);

      // A working count between a refused one and its take-back keeps its count, its time and its place.
      const refused = await findKeyForRequest(db.knex, fingerprintOf(key.key));
      await countRequest(db.knex, key);
      const busy = await usage(key);
      await takeBackCounts(db.knex, [refused!.receipt]);
      // Exactly one place goes: the working count may have come in the same millisecond and keeps its own.
      const hits = [...present(busy.hits, 'the rate window')];
      hits.splice(hits.indexOf(refused!.receipt.at), 1);
      expect(await usage(key)).to.deep.equal({ ...busy, request_count: busy.request_count - 1, hits });
      expect((await usage(key)).last_used_at).to.not.equal(before.last_used_at);
    });

    it('takes back no place that a refused request did not take (over the limit), and leaves no minute for a key never let through', async () => {
      const key = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Full minute' });
      await countRequest(db.knex, key, 1);
      const over = await findKeyForRequest(db.knex, fingerprintOf(key.key), 1);
      expect([over!.window.points, over!.receipt.placed]).to.deep.equal([2, false]);
      await takeBackCounts(db.knex, [over!.receipt]);
      expect((await usage(key)).hits).to.have.length(1);
      expect((await usage(key)).request_count).to.equal(1);

      const fresh = await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Never let through' });
      await takeBackCounts(db.knex, [(await findKeyForRequest(db.knex, fingerprintOf(fresh.key)))!.receipt]);
      expect(await usage(fresh)).to.deep.equal({ request_count: 0, last_used_at: null, hits: undefined });
    });

    it('gathers concurrent counts into batches without losing, doubling or deadlocking a count, over two processes\' worth of requests', async () => {
      const keys = [await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Busy 1' }), await makeKey(db.knex, { study: 'DEMO', by: world.manager, name: 'Busy 2' })];
      const lookups = [createKeyLookup(db.knex, 600), createKeyLookup(db.knex, 600)];
      const answers = await Promise.all(Array.from({ length: 240 }, async (_, i) => {
        const key = at(keys, Math.floor(i / 3) % 2, 'the keys');
        return { id: key.id, window: (await at(lookups, i % 2, 'the lookups').findAndCount(fingerprintOf(key.key), new Date()))!.window };
      }));
      for (const [n, key] of keys.entries()) {
        const points = answers.filter((a) => a.id === key.id).map((a) => a.window.points).sort((x, y) => x - y);
        expect(points, `key ${n + 1}`).to.deep.equal(Array.from({ length: 120 }, (_, i) => i + 1));
        expect((await db.knex('api_keys').where({ id: key.id }).first<KeyCount | undefined>())?.request_count).to.equal(120);
      }
    });
  });

  describe('insertRows', () => {
    before(async () => {
      // Made by the owner, as a migration would be: the runtime role gets its access by default privileges (src/db/roles.ts).
      await (await testOwnerDatabase()).knex.raw('create table if not exists insert_rows_probe (id serial primary key, label text, amount integer, at timestamptz, doc jsonb, flag boolean not null default true)');
    });
    after(async () => {
      await (await testOwnerDatabase()).knex.raw('drop table if exists insert_rows_probe');
    });

    it('stores text, numbers, times and jsonb exactly as bound parameters would, and fills defaults', async () => {
      await insertRows(db.knex, 'insert_rows_probe', [
        { label: 'a "quoted" \\ value', amount: 7, at: '2026-03-02T10:00:00.123Z', doc: { b: [1, 'x'], a: null } },
        { label: null, amount: null, at: null, doc: [] },
      ]);
      const rows = await db.knex('insert_rows_probe').orderBy('id').select('label', 'amount', 'at', 'doc', 'flag');
      expect(rows).to.deep.equal([
        { label: 'a "quoted" \\ value', amount: 7, at: new Date('2026-03-02T10:00:00.123Z'), doc: { a: null, b: [1, 'x'] }, flag: true },
        { label: null, amount: null, at: null, doc: [], flag: true },
      ]);
    });

    it('stores a lone surrogate as U+FFFD, as a bound parameter does, and does nothing for no rows', async () => {
      await db.knex('insert_rows_probe').del();
      await insertRows(db.knex, 'insert_rows_probe', [{ label: 'a\ud800b' }]);
      await db.knex('insert_rows_probe').insert({ label: 'a\ud800b' });
      await insertRows(db.knex, 'insert_rows_probe', []);
      expect((await db.knex<{ id: number; label: string }>('insert_rows_probe').orderBy('id').select('label')).map((r) => r.label)).to.deep.equal(['a\ufffdb', 'a\ufffdb']);
    });
  });

  describe('designIds', () => {
    interface DesignPart { id: number; code: string; study_id: number }
    it('gives the visit and form ids of the study alone, by code', async () => {
      const stores = createStores(db.knex);
      const demo = (await stores.studies.findByCode('DEMO'))!;
      const ids = await stores.studies.designIds(demo);
      const visits = await db.knex<DesignPart>('visits').where({ study_id: demo.id }).select('id', 'code');
      const forms = await db.knex<DesignPart>('forms').where({ study_id: demo.id }).select('id', 'code');
      expect([...ids.visits.entries()]).to.have.deep.members(visits.map((v) => [v.code, v.id]));
      expect([...ids.forms.entries()]).to.have.deep.members(forms.map((f) => [f.code, f.id]));
    });
  });
});
