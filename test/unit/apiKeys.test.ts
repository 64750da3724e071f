/**
 * The API key rules over in-memory fake stores: no database, so each rule is checked alone and in
 * milliseconds, and "no database look-up" can be asserted by counting the store's calls. The same
 * rules through real HTTP on a real database are in test/api/apiKeys.test.ts.
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { admissionOf, authenticateRequest, recheckRequest, type KeyGate } from '../../src/domain/apiKeys/admission.js';
import { authenticateKey } from '../../src/domain/apiKeys/authenticateKey.js';
import type { KeyRight } from '../../src/domain/apiKeys/keyAccess.js';
import { createApiKey, type NewApiKey } from '../../src/domain/apiKeys/createApiKey.js';
import { listApiKeys } from '../../src/domain/apiKeys/listApiKeys.js';
import { listReads } from '../../src/domain/apiKeys/listReads.js';
import { keyStateOf, type KeyStateFacts } from '../../src/domain/apiKeys/keyState.js';
import { fingerprintOf, generateKeyValue, hintOf, isWellFormedKey, KEY_PREFIX, sameFingerprint } from '../../src/domain/apiKeys/keyValue.js';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { stopKeysOfMaker } from '../../src/domain/apiKeys/stopKeysOfMaker.js';
import { DomainError } from '../../src/domain/errors.js';
import { only } from '../helpers/only.js';
import type { ApiKeyStore, ApiKeyWithMaker, AuditEntry, AuditStore, Patient, PatientStore, PeopleStore, ReadLogRow, ReadLogStore, Role, Site, Study, StudyStore, User } from '../../src/domain/stores.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DAY = 86_400_000;
const NOW = new Date('2026-11-22T10:00:00Z');

/** A store with only the methods a test gives; any other call fails loudly instead of passing by accident. */
function fake<T extends object>(methods: Partial<T>): T {
  return new Proxy(methods, {
    get(target, name) {
      if (name in target) return target[name as keyof typeof target];
      if (name === 'then') return undefined;
      throw new Error(`fake store: unexpected call of ${String(name)}`);
    },
  }) as T;
}

async function refusal(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('expected a DomainError, but the call succeeded');
}

function decodeBase62(text: string): bigint {
  return [...text].reduce((n, c) => n * 62n + BigInt(BASE62.indexOf(c)), 0n);
}

describe('API key values (keyValue)', () => {
  it('makes `sdx_` and 49 base62 characters that pass their own checksum, never the same twice', () => {
    const values = Array.from({ length: 200 }, () => generateKeyValue());
    for (const value of values) {
      expect(value).to.match(/^sdx_[0-9A-Za-z]{49}$/);
      expect(isWellFormedKey(value), value).to.equal(true);
    }
    expect(new Set(values).size).to.equal(200);
  });

  it('carries 256 random bits: 43 characters whose values reach the top bit of a 256-bit number and never beyond', () => {
    const secrets = Array.from({ length: 64 }, () => decodeBase62(generateKeyValue().slice(KEY_PREFIX.length, KEY_PREFIX.length + 43)));
    for (const s of secrets) expect(s < 2n ** 256n).to.equal(true);
    // Each key has its top bit set with probability 1/2: 64 keys without it would mean far fewer random bits.
    expect(secrets.some((s) => s >= 2n ** 255n)).to.equal(true);
    // Two keys share no long run of the same bits: each of 64 low 64-bit words is different.
    expect(new Set(secrets.map((s) => s & (2n ** 64n - 1n))).size).to.equal(64);
  });

  it('refuses every one-character mistype and every swap of neighbouring characters (checksum)', () => {
    const value = generateKeyValue();
    for (let i = KEY_PREFIX.length; i < value.length; i++) {
      for (const c of ['0', 'Z', 'z', 'k']) {
        if (value[i] === c) continue;
        const mistyped = `${value.slice(0, i)}${c}${value.slice(i + 1)}`;
        expect(isWellFormedKey(mistyped), `character ${i} typed as ${c}`).to.equal(false);
      }
      if (i + 1 < value.length && value[i] !== value[i + 1]) {
        const swapped = `${value.slice(0, i)}${value[i + 1]}${value[i]}${value.slice(i + 2)}`;
        expect(isWellFormedKey(swapped), `characters ${i} and ${i + 1} swapped`).to.equal(false);
      }
    }
  });

  it('refuses anything without the exact prefix, length and alphabet', () => {
    const value = generateKeyValue();
    const body = value.slice(KEY_PREFIX.length);
    for (const wrong of ['', KEY_PREFIX, `SDX_${body}`, `sdx-${body}`, body, `${value}0`, value.slice(0, -1), `${value.slice(0, 10)}-${value.slice(11)}`, ` ${value}`, `${value}\n`, `Bearer ${value}`]) {
      expect(isWellFormedKey(wrong), JSON.stringify(wrong)).to.equal(false);
    }
  });

  it('keeps only a SHA-256 fingerprint, compared in constant time, and a hint too short to use', () => {
    const value = generateKeyValue();
    const fingerprint = fingerprintOf(value);
    expect(fingerprint.equals(createHash('sha256').update(value).digest())).to.equal(true);
    expect(sameFingerprint(fingerprint, fingerprintOf(value))).to.equal(true);
    expect(sameFingerprint(fingerprint, fingerprintOf(generateKeyValue()))).to.equal(false);
    expect(sameFingerprint(fingerprint, fingerprint.subarray(0, 16))).to.equal(false);
    expect(hintOf(value)).to.equal(`${value.slice(0, 10)}…`);
  });
});

describe('keyStateOf', () => {
  const working: KeyStateFacts = { revokedAt: null, expiresAt: new Date(NOW.getTime() + DAY), canRead: true, stoppedReason: null, makerIsManager: true, makerCanExport: true };
  const cases: { facts: Partial<KeyStateFacts>; state: ReturnType<typeof keyStateOf> }[] = [
    { facts: {}, state: { state: 'active' } },
    { facts: { revokedAt: new Date(NOW.getTime() - 1) }, state: { state: 'revoked' } },
    // Revoked and expired: revocation is what a person did, so it is what the key list shows.
    { facts: { revokedAt: new Date(NOW.getTime() - 1), expiresAt: new Date(NOW.getTime() - DAY) }, state: { state: 'revoked' } },
    { facts: { expiresAt: NOW }, state: { state: 'expired' } },
    { facts: { expiresAt: new Date(NOW.getTime() + 1) }, state: { state: 'active' } },
    { facts: { expiresAt: new Date(NOW.getTime() - 1), makerIsManager: false }, state: { state: 'expired' } },
    { facts: { makerIsManager: false }, state: { state: 'stopped', why: 'maker_not_manager' } },
    { facts: { makerIsManager: false, makerCanExport: false }, state: { state: 'stopped', why: 'maker_not_manager' } },
    { facts: { makerCanExport: false }, state: { state: 'stopped', why: 'maker_lost_export' } },
    { facts: { canRead: false, makerCanExport: false }, state: { state: 'active' } },
    { facts: { canRead: false, makerIsManager: false }, state: { state: 'stopped', why: 'maker_not_manager' } },
    // A kept stop wins over the maker's roles as they are now: the role or the right given back restarts nothing.
    { facts: { stoppedReason: 'maker_not_manager' }, state: { state: 'stopped', why: 'maker_not_manager' } },
    { facts: { stoppedReason: 'maker_lost_export' }, state: { state: 'stopped', why: 'maker_lost_export' } },
    { facts: { stoppedReason: 'maker_lost_export', makerIsManager: false }, state: { state: 'stopped', why: 'maker_lost_export' } },
    { facts: { stoppedReason: 'maker_not_manager', revokedAt: new Date(NOW.getTime() - 1) }, state: { state: 'revoked' } },
    { facts: { stoppedReason: 'maker_not_manager', expiresAt: NOW }, state: { state: 'expired' } },
  ];
  for (const { facts, state } of cases) {
    it(`${JSON.stringify(facts)} → ${JSON.stringify(state)}`, () => {
      expect(keyStateOf({ ...working, ...facts }, NOW)).to.deep.equal(state);
    });
  }
});

/** A stored key of study 1 made by user 7, who manages sites 1 and 2, with every right on both. */
function storedKey(value: string, changes: Partial<ApiKeyWithMaker> = {}): ApiKeyWithMaker {
  return {
    id: 11, studyId: 1, name: 'LIMS', fingerprint: fingerprintOf(value), hint: hintOf(value), canRead: true, canWrite: true, canEnrol: true,
    termDays: 90, expiresAt: new Date(NOW.getTime() + 10 * DAY), createdBy: 7, createdAt: new Date(NOW.getTime() - DAY), revokedAt: null,
    stoppedReason: null, lastUsedAt: null, requestCount: 0, rowsRead: 0, siteIds: [1, 2], studyCode: 'DEMO', makerName: 'Dana', makerIsManager: true,
    makerCanExport: true, makerUnblinded: false, makerSiteIds: [1, 2], ...changes,
  };
}

describe('authenticateKey', () => {
  const value = generateKeyValue();
  let lookups: Buffer[];
  const storeWith = (key?: ApiKeyWithMaker) => {
    lookups = [];
    return fake<ApiKeyStore>({ findByFingerprint: (fingerprint) => { lookups.push(fingerprint); return Promise.resolve(key); } });
  };

  it('refuses a missing key and a malformed or mistyped key without looking anything up', async () => {
    const store = storeWith(storedKey(value));
    const mistyped = `${value.slice(0, 20)}${value[20] === 'a' ? 'b' : 'a'}${value.slice(21)}`;
    const codes = [];
    for (const bearer of [undefined, '', 'secret', `Bearer ${value}`, mistyped, value.toLowerCase()]) codes.push((await refusal(authenticateKey(store, bearer, NOW))).code);
    expect(codes).to.deep.equal(['key_missing', 'key_missing', 'key_malformed', 'key_malformed', 'key_malformed', 'key_malformed']);
    expect(lookups).to.deep.equal([]);
  });

  it('looks a well-formed key up by its fingerprint only, and refuses one that is not stored', async () => {
    const store = storeWith(undefined);
    expect((await refusal(authenticateKey(store, value, NOW))).code).to.equal('key_unknown');
    expect(lookups).to.have.length(1);
    expect(only(lookups, 'the lookups').equals(createHash('sha256').update(value).digest())).to.equal(true);
  });

  const stops: [Partial<ApiKeyWithMaker>, string, string | undefined][] = [
    [{ revokedAt: new Date(NOW.getTime() - 1) }, 'key_revoked', undefined],
    [{ expiresAt: new Date(NOW.getTime() - 1) }, 'key_expired', undefined],
    [{ makerIsManager: false }, 'key_stopped', 'maker_not_manager'],
    [{ makerCanExport: false }, 'key_stopped', 'maker_lost_export'],
  ];
  for (const [changes, code, variant] of stops) {
    it(`refuses a key with ${JSON.stringify(changes)} as ${code}${variant ? ` (${variant})` : ''}`, async () => {
      const error = await refusal(authenticateKey(storeWith(storedKey(value, changes)), value, NOW));
      expect(error.code).to.equal(code);
      expect(error.params.variant).to.equal(variant);
    });
  }

  it('gives a working key its study, rights and only the sites its maker may still see', async () => {
    const context = await authenticateKey(storeWith(storedKey(value, { canRead: false, makerCanExport: false, makerSiteIds: [2, 3] })), value, NOW);
    expect(context).to.deep.equal({
      keyId: 11, keyName: 'LIMS', studyId: 1, studyCode: 'DEMO', canRead: false, canWrite: true, canEnrol: true, siteIds: [2],
      makerId: 7, makerName: 'Dana', makerUnblinded: false,
    });
  });
});

describe('authenticateRequest and admissionOf', () => {
  const value = generateKeyValue();
  const study = { id: 1, code: 'DEMO', name: 'Demo', apiEnabled: true } as Study;
  /** A gate over one stored key that counts every request whose key it finds, as the store does, and records the counts taken back. */
  const gateWith = (key: ApiKeyWithMaker | undefined, points = 1, now: { key?: ApiKeyWithMaker; study?: Study } = {}) => {
    const counted: number[] = [];
    const gate: KeyGate = {
      findAndCount: (_fingerprint, at) => {
        if (!key) return Promise.resolve(undefined);
        counted.push(key.id);
        return Promise.resolve({ key, study, window: { points, expire: NOW.getTime() + 30_000 }, receipt: { keyId: key.id, at: at.getTime(), placed: true, usedBefore: null, usedAt: 'now' } });
      },
      // The key and study as a later look-up finds them: `now` when the test changed them since.
      find: () => Promise.resolve(key && { key: now.key ?? key, study: now.study ?? study }),
      takeBack: (receipt) => {
        counted.splice(counted.indexOf(receipt.keyId), 1);
        return Promise.resolve();
      },
    };
    return { gate, counted };
  };

  it('leaves a request counted only when its key works: the count of a 401 is taken back before the refusal', async () => {
    for (const changes of [{ revokedAt: NOW }, { expiresAt: NOW }, { makerIsManager: false }]) {
      const { gate, counted } = gateWith(storedKey(value, changes));
      expect((await refusal(authenticateRequest(gate, value, NOW))).code).to.match(/^key_/);
      expect(counted).to.deep.equal([]);
    }
    expect((await refusal(authenticateRequest(gateWith(undefined).gate, value, NOW))).code).to.equal('key_unknown');
    const { gate, counted } = gateWith(storedKey(value));
    const request = await authenticateRequest(gate, value, NOW);
    expect([request.key.keyId, request.study.code, request.window.points, counted]).to.deep.equal([11, 'DEMO', 1, [11]]);
  });

  it('decides a request whose body has arrived on its key and study as they are then, keeping its count and place in the minute', async () => {
    const locked = { ...study, locked: true };
    const { gate, counted } = gateWith(storedKey(value), 7, { key: storedKey(value, { makerSiteIds: [2] }), study: locked });
    const request = await recheckRequest(gate, value, NOW, await authenticateRequest(gate, value, NOW));
    expect([request.key.siteIds, request.study.locked, request.window.points, counted]).to.deep.equal([[2], true, 7, [11]]);
  });

  it('refuses a request whose key stopped working while its body arrived with the key\'s 401, taking its count back', async () => {
    for (const changes of [{ revokedAt: NOW }, { expiresAt: NOW }, { makerIsManager: false }, { canRead: true, makerCanExport: false }]) {
      const { gate, counted } = gateWith(storedKey(value), 1, { key: storedKey(value, changes) });
      const first = await authenticateRequest(gate, value, NOW);
      expect(counted).to.deep.equal([11]);
      expect((await refusal(recheckRequest(gate, value, NOW, first))).code).to.match(/^key_(revoked|expired|stopped)$/);
      expect(counted).to.deep.equal([]);
    }
  });

  it('refuses over the rate first, then another study as an unknown one, then a missing right, always with the rate used', async () => {
    const key = (await authenticateRequest(gateWith(storedKey(value, { canEnrol: false })).gate, value, NOW)).key;
    const window = (points: number) => ({ points, expire: NOW.getTime() + 30_000 });
    const cases: [number, string, KeyRight, string | undefined][] = [
      [601, 'OTHER', 'enrol', 'rate_limited'],
      [600, 'OTHER', 'read', 'study_not_found'],
      [600, 'DEMO', 'enrol', 'right_missing'],
      [600, 'DEMO', 'write', undefined],
    ];
    for (const [points, studyCode, right, code] of cases) {
      const admission = admissionOf({ key, study, window: window(points) }, { studyCode, right }, 600, NOW.getTime());
      expect([admission.refusal?.code, admission.study?.code, admission.rate.remaining, admission.rate.resetSeconds])
        .to.deep.equal([code, code ? undefined : 'DEMO', 0, 30]);
    }
  });
});

/** Study DEMO (id 1) with sites 01..03; Dana manages 01 and 02 and may export, Pat manages all without export, Sam is site staff. */
function world() {
  const study = { id: 1, code: 'DEMO', name: 'Demo', apiEnabled: true } as Study;
  const sites: Site[] = [{ id: 1, number: '01', name: 'A' }, { id: 2, number: '02', name: 'B' }, { id: 3, number: '03', name: 'C' }];
  const users: User[] = [
    { id: 7, email: 'dana@sdx.test', name: 'Dana', passwordHash: null },
    { id: 8, email: 'pat@sdx.test', name: 'Pat', passwordHash: null },
    { id: 9, email: 'sam@sdx.test', name: 'Sam', passwordHash: null },
  ];
  const role = (userId: number, changes: Partial<Role>): Role => ({
    id: userId, studyId: 1, userId, role: 'manager', canExport: true, unblinded: false, allSites: false, siteIds: [1, 2, 3], ...changes,
  });
  const roles = [role(7, { siteIds: [1, 2] }), role(8, { canExport: false, allSites: true }), role(9, { role: 'site_staff', siteIds: [1] })];
  const inserted: Parameters<ApiKeyStore['insert']>[0][] = [];
  const revoked: number[] = [];
  const stopped: [number, string][] = [];
  const audit: AuditEntry[] = [];
  const keys = new Map<number, ApiKeyWithMaker>();
  const stores = {
    studies: fake<StudyStore>({ findByCode: (code) => Promise.resolve(code === 'DEMO' ? study : undefined), sites: () => Promise.resolve(sites) }),
    people: fake<PeopleStore>({
      findUserByEmail: (email) => Promise.resolve(users.find((u) => u.email === email)),
      roles: (_studyId, userId) => Promise.resolve(roles.filter((r) => r.userId === userId)),
    }),
    apiKeys: fake<ApiKeyStore>({
      insert: (key) => {
        inserted.push(key);
        return Promise.resolve({ ...key, id: 40 + inserted.length, createdAt: NOW, revokedAt: null, stoppedReason: null, lastUsedAt: null, requestCount: 0, rowsRead: 0 });
      },
      findById: (studyId, id) => Promise.resolve(studyId === 1 ? keys.get(id) : undefined),
      revoke: (id) => {
        revoked.push(id);
        return Promise.resolve();
      },
      list: () => Promise.resolve([...keys.values()]),
      stop: (id, reason) => {
        stopped.push([id, reason]);
        return Promise.resolve(true);
      },
    }),
    audit: fake<AuditStore>({
      append: (entries) => {
        audit.push(...entries);
        return Promise.resolve();
      },
    }),
  };
  return { stores, inserted, revoked, stopped, audit, keys };
}

describe('createApiKey', () => {
  const input = (changes: Partial<NewApiKey> = {}): NewApiKey => ({
    study: 'DEMO', by: 'dana@sdx.test', name: 'Hospital LIS', canRead: true, canWrite: true, canEnrol: true, termDays: 30, ...changes,
  });

  it('makes a key for the manager\'s sites, keeps only its fingerprint and hint, and audits its making without the value', async () => {
    const w = world();
    const made = await createApiKey(w.stores, input({ name: '  Hospital LIS ' }), NOW);
    expect(isWellFormedKey(made.key)).to.equal(true);
    expect(made.siteNumbers).to.deep.equal(['01', '02']);
    expect(made.expiresAt).to.deep.equal(new Date(NOW.getTime() + 30 * DAY));
    expect(w.inserted).to.have.length(1);
    const stored = only(w.inserted, 'the keys inserted');
    expect(stored).to.include({ studyId: 1, name: 'Hospital LIS', canRead: true, canWrite: true, canEnrol: true, termDays: 30, createdBy: 7, hint: hintOf(made.key) });
    expect(stored.siteIds).to.deep.equal([1, 2]);
    expect(stored.fingerprint.equals(createHash('sha256').update(made.key).digest())).to.equal(true);
    const secret = made.key.slice(KEY_PREFIX.length);
    expect(JSON.stringify({ ...stored, fingerprint: stored.fingerprint.toString('hex') })).not.to.contain(secret.slice(6));
    expect(w.audit).to.have.length(1);
    expect(w.audit[0]).to.deep.include({ studyId: 1, actorType: 'user', actorId: 7, author: 'Dana', action: 'api_key.created' });
    expect(w.audit[0]?.details).to.deep.equal({ key_id: 41, name: 'Hospital LIS', read: true, write: true, enrol: true, sites: ['01', '02'], term_days: 30 });
    expect(JSON.stringify(w.audit)).not.to.contain(secret.slice(6));
  });

  it('takes the chosen sites, each named once, and every term of 30, 90 or 365 days', async () => {
    for (const termDays of [30, 90, 365]) {
      const w = world();
      const made = await createApiKey(w.stores, input({ sites: ['02', '02'], termDays }), NOW);
      expect(made.siteNumbers).to.deep.equal(['02']);
      expect(w.inserted[0]?.siteIds).to.deep.equal([2]);
      expect(made.expiresAt.getTime() - NOW.getTime()).to.equal(termDays * DAY);
    }
  });

  it('lets a manager without the export right make a write key, but not a read key', async () => {
    const w = world();
    const writer = await createApiKey(w.stores, input({ by: 'pat@sdx.test', canRead: false }), NOW);
    expect(writer.siteNumbers).to.deep.equal(['01', '02', '03']);
    const error = await refusal(createApiKey(w.stores, input({ by: 'pat@sdx.test', canWrite: false })));
    expect(error.code).to.equal('export_right_missing');
    expect(error.params).to.deep.equal({ email: 'pat@sdx.test' });
  });

  const refusals: [string, Partial<NewApiKey>, string][] = [
    ['an unknown study', { study: 'NOSUCH' }, 'study_not_found'],
    ['an unknown person', { by: 'nobody@sdx.test' }, 'user_not_found'],
    ['site staff, not a manager', { by: 'sam@sdx.test', canRead: false }, 'not_a_manager'],
    ['a blank name', { name: '   ' }, 'invalid_key_name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'invalid_key_name'],
    ['neither read nor write', { canRead: false, canWrite: false }, 'key_rights_missing'],
    ['a term of 31 days', { termDays: 31 }, 'invalid_key_term'],
    ['a term of 0 days', { termDays: 0 }, 'invalid_key_term'],
    ['a site the manager may not see', { sites: ['01', '03'] }, 'site_not_allowed'],
    ['a site the study does not have', { sites: ['99'] }, 'site_not_allowed'],
    ['no site', { sites: [] }, 'key_sites_missing'],
  ];
  for (const [what, changes, code] of refusals) {
    it(`refuses ${what} (${code}), storing and auditing nothing`, async () => {
      const w = world();
      expect((await refusal(createApiKey(w.stores, input(changes), NOW))).code).to.equal(code);
      expect(w.inserted).to.deep.equal([]);
      expect(w.audit).to.deep.equal([]);
    });
  }
});

describe('revokeApiKey', () => {
  const value = generateKeyValue();

  it('revokes a key of the study and audits it with the manager as author', async () => {
    const w = world();
    w.keys.set(11, storedKey(value));
    await revokeApiKey(w.stores, { study: 'DEMO', keyId: 11, by: 'pat@sdx.test', via: 'portal' });
    expect(w.revoked).to.deep.equal([11]);
    expect(w.audit).to.have.length(1);
    expect(w.audit[0]).to.deep.include({ actorId: 8, author: 'Pat', reason: 'Entered in the portal', action: 'api_key.revoked', details: { key_id: 11, name: 'LIMS' } });
  });

  const refusals: [string, { keyId: number; by: string }, Partial<ApiKeyWithMaker>, string][] = [
    ['a person who is not a manager', { keyId: 11, by: 'sam@sdx.test' }, {}, 'not_a_manager'],
    ['a key the study does not have', { keyId: 12, by: 'dana@sdx.test' }, {}, 'key_not_found'],
    ['a key already revoked', { keyId: 11, by: 'dana@sdx.test' }, { revokedAt: NOW }, 'key_already_revoked'],
  ];
  for (const [what, request, changes, code] of refusals) {
    it(`refuses ${what} (${code})`, async () => {
      const w = world();
      w.keys.set(11, storedKey(value, changes));
      expect((await refusal(revokeApiKey(w.stores, { study: 'DEMO', via: 'cli', ...request }))).code).to.equal(code);
      expect(w.revoked).to.deep.equal([]);
      expect(w.audit).to.deep.equal([]);
    });
  }
});

describe('stopKeysOfMaker', () => {
  it('keeps the stop of each key of the maker that the maker\'s roles stop now, once, auditing each with the actor', async () => {
    const w = world();
    const key = (id: number, changes: Partial<ApiKeyWithMaker>) => w.keys.set(id, storedKey(generateKeyValue(), { id, name: `K${id}`, ...changes }));
    key(1, { makerIsManager: false });
    key(2, { makerCanExport: false });
    key(3, { makerCanExport: false, canRead: false });
    key(4, { makerIsManager: false, stoppedReason: 'maker_lost_export' });
    key(5, { makerIsManager: false, revokedAt: NOW });
    key(6, { makerIsManager: false, expiresAt: NOW });
    key(7, { makerIsManager: false, createdBy: 8 });
    key(8, {});
    await stopKeysOfMaker(w.stores, { kind: 'operator', name: 'root' }, { studyId: 1, userId: 7 }, NOW);
    expect(w.stopped).to.deep.equal([[1, 'maker_not_manager'], [2, 'maker_lost_export']]);
    expect(w.audit.map((e) => [e.action, e.author, e.actorType, e.details])).to.deep.equal([
      ['api_key.stopped', 'root (command line)', 'operator', { key_id: 1, name: 'K1', why: 'maker_not_manager' }],
      ['api_key.stopped', 'root (command line)', 'operator', { key_id: 2, name: 'K2', why: 'maker_lost_export' }],
    ]);
  });
});

describe('listApiKeys', () => {
  it('shows each key\'s state and why it stopped, its rights, sites and usage', async () => {
    const w = world();
    w.keys.set(1, storedKey(generateKeyValue(), { id: 1, name: 'A', canEnrol: false, requestCount: 5, rowsRead: 40, lastUsedAt: NOW }));
    w.keys.set(2, storedKey(generateKeyValue(), { id: 2, name: 'B', canWrite: false, canEnrol: false, makerCanExport: false, siteIds: [3] }));
    w.keys.set(3, storedKey(generateKeyValue(), { id: 3, name: 'C', revokedAt: NOW }));
    const listed = await listApiKeys(w.stores, 'DEMO', NOW);
    expect(listed.map((k) => [k.name, k.state, k.why, k.rights, k.sites, k.requestCount, k.rowsRead])).to.deep.equal([
      ['A', 'active', null, ['read', 'write'], ['01', '02'], 5, 40],
      ['B', 'stopped', 'maker_lost_export', ['read'], ['03'], 0, 0],
      ['C', 'revoked', null, ['read', 'write', 'enrol'], ['01', '02'], 0, 0],
    ]);
  });
});

describe('listReads', () => {
  const reads = () => {
    const asked: [number, number][] = [];
    const readLog = fake<ReadLogStore>({ lastReads: (studyId, limit) => { asked.push([studyId, limit]); return Promise.resolve([]); } });
    return { asked, stores: { studies: world().stores.studies, readLog, patients: fake<PatientStore>({}) } };
  };

  it('asks the store for the study\'s last 50 reads by default, or as many as asked', async () => {
    const r = reads();
    await listReads(r.stores, 'DEMO');
    await listReads(r.stores, 'DEMO', 1000);
    expect(r.asked).to.deep.equal([[1, 50], [1, 1000]]);
  });

  it('refuses a number of reads outside 1..1000 and an unknown study', async () => {
    const r = reads();
    for (const limit of [0, -1, 1.5, 1001, Number.NaN]) {
      const error = await refusal(listReads(r.stores, 'DEMO', limit));
      expect(error.code).to.equal('invalid_reads_limit');
      expect(error.params).to.deep.equal({ max: 1000 });
    }
    expect((await refusal(listReads(r.stores, 'NOSUCH'))).code).to.equal('study_not_found');
    expect(r.asked).to.deep.equal([]);
  });

  it('shows a person the patients that reads named only at the person\'s sites; the command line sees every read as logged', async () => {
    const read = (id: number, filters: Record<string, unknown>): ReadLogRow => ({ id, keyId: 1, keyName: 'K', at: NOW, operation: 'records', filters, rows: 1 });
    const logged = [
      read(1, { subject: '01-001', limit: 500 }), read(2, { subject: '02-001', limit: 500 }), read(3, { subject: '09-404', limit: 500 }),
      read(4, { import: 'DEMO-02-001-3' }), read(5, { import: 'DEMO-01-001-1' }), read(6, { site: '02', limit: 500 }),
    ];
    const patient = (subject: string, siteId: number) => ({ subject, siteId, consent: undefined }) as Patient & { consent: undefined };
    const stores = {
      studies: world().stores.studies,
      readLog: fake<ReadLogStore>({ lastReads: () => Promise.resolve(logged) }),
      patients: fake<PatientStore>({ findBySubjects: (_study, subjects) => Promise.resolve([patient('01-001', 1), patient('02-001', 2)].filter((p) => subjects.includes(p.subject))) }),
    };
    expect((await listReads(stores, 'DEMO', 50, [1])).map((r) => r.filters)).to.deep.equal([
      { subject: '01-001', limit: 500 }, { subject: '…', limit: 500 }, { subject: '…', limit: 500 },
      { import: '…' }, { import: 'DEMO-01-001-1' }, { site: '02', limit: 500 },
    ]);
    expect((await listReads(stores, 'DEMO', 50, [1, 2])).map((r) => r.filters.subject ?? r.filters.import)).to.deep.equal(['01-001', '02-001', '…', 'DEMO-02-001-3', 'DEMO-01-001-1', undefined]);
    expect(await listReads(stores, 'DEMO', 50)).to.deep.equal(logged);
  });
});
