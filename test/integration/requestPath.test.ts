import { expect } from 'chai';
import { fingerprintOf } from '../../src/domain/apiKeys/keyValue.js';
import { findKeyWithStudy } from '../../src/db/apiKeys.js';
import { insertRows } from '../../src/db/insertRows.js';
import type { Database } from '../../src/db/knex.js';
import { createRateLimiter } from '../../src/db/rateLimits.js';
import { createStores } from '../../src/db/stores.js';
import { createStudyWorld, demoDesign, type StudyWorld } from '../helpers/factories.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

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

  describe('findKeyWithStudy', () => {
    it('returns the key as findByFingerprint does, its study as findByCode does and the sites and ids of the study as the study store reads them, also the second time (design from memory)', async () => {
      const stores = createStores(db.knex);
      const fingerprint = fingerprintOf(world.key);
      const study = await stores.studies.findByCode('DEMO');
      for (let i = 0; i < 2; i++) {
        const found = await findKeyWithStudy(db.knex, fingerprint);
        expect(found!.key).to.deep.equal(await stores.apiKeys.findByFingerprint(fingerprint));
        const { structure, ...row } = found!.study;
        expect(row).to.deep.equal(study);
        // The structure it carries is what the study store reads with its own queries.
        expect(structure!.sites).to.deep.equal(await stores.studies.sites(study!));
        expect(structure!.ids).to.deep.equal(await stores.studies.designIds(study!));
      }
    });

    it('gives each key its own study, and nothing for an unknown fingerprint', async () => {
      const other = await db.knex('api_keys as k').join('studies as s', 's.id', 'k.study_id').where('s.code', 'OTHER').first('k.fingerprint');
      const found = await findKeyWithStudy(db.knex, other.fingerprint);
      expect(found!.study.code).to.equal('OTHER');
      expect(found!.key.studyCode).to.equal('OTHER');
      expect(await findKeyWithStudy(db.knex, fingerprintOf('sdx_nothing'))).to.equal(undefined);
    });

    it('hands out a frozen design, so no request can change what the next one reads', async () => {
      const { study } = (await findKeyWithStudy(db.knex, fingerprintOf(world.key)))!;
      expect(Object.isFrozen(study.design)).to.equal(true);
      expect(Object.isFrozen(study.design.forms[0].fields[0])).to.equal(true);
      expect(() => study.design.forms.push(study.design.forms[0])).to.throw(TypeError);
    });
  });

  describe('createRateLimiter', () => {
    it('counts each request in the window and in the key, refuses past the limit, and starts a new window when one ends', async () => {
      const limiter = createRateLimiter(db.knex, 3);
      const before = await db.knex('api_keys').where({ id: world.keyId }).first('request_count', 'last_used_at');
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await limiter.consume(world.keyId));
      expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).to.deep.equal([[true, 3, 2], [true, 3, 1], [true, 3, 0], [false, 3, 0]]);
      for (const d of decisions) expect(d.resetSeconds).to.be.within(1, 60);
      const after = await db.knex('api_keys').where({ id: world.keyId }).first('request_count', 'last_used_at');
      expect(after.request_count).to.equal(before.request_count + 4);
      expect(after.last_used_at).to.be.instanceOf(Date);
      expect(await db.knex('rate_limits').where({ key: `key:${world.keyId}` }).first('points')).to.deep.equal({ points: 4 });

      await db.knex('rate_limits').where({ key: `key:${world.keyId}` }).update({ expire: Date.now() - 1 });
      expect(await limiter.consume(world.keyId)).to.deep.include({ allowed: true, remaining: 2 });
    });
  });

  describe('insertRows', () => {
    before(async () => {
      await db.knex.raw('create table if not exists insert_rows_probe (id serial primary key, label text, amount integer, at timestamptz, doc jsonb, flag boolean not null default true)');
    });
    after(async () => {
      await db.knex.raw('drop table if exists insert_rows_probe');
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
      expect((await db.knex('insert_rows_probe').orderBy('id').select('label')).map((r) => r.label)).to.deep.equal(['a\ufffdb', 'a\ufffdb']);
    });
  });

  describe('designIds', () => {
    it('gives the visit and form ids of the study alone, by code', async () => {
      const stores = createStores(db.knex);
      const demo = (await stores.studies.findByCode('DEMO'))!;
      const ids = await stores.studies.designIds(demo);
      const visits = await db.knex('visits').where({ study_id: demo.id }).select('id', 'code');
      const forms = await db.knex('forms').where({ study_id: demo.id }).select('id', 'code');
      expect([...ids.visits.entries()]).to.have.deep.members(visits.map((v) => [v.code, v.id]));
      expect([...ids.forms.entries()]).to.have.deep.members(forms.map((f) => [f.code, f.id]));
    });
  });
});
