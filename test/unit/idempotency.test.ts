import { expect } from 'chai';
import { DomainError, isDomainError } from '../../src/domain/errors.js';
import { onceForKey } from '../../src/domain/idempotency/onceForKey.js';
import { requestFingerprint } from '../../src/domain/idempotency/requestFingerprint.js';
import type { IdempotencyKeyStore, IdempotencyScope } from '../../src/domain/stores.js';

/** Claims in a map: what the database does for one transaction at a time. */
function fakeStore(): IdempotencyKeyStore & { kept: Map<string, { fingerprint: string; result: unknown }> } {
  const kept = new Map<string, { fingerprint: string; result: unknown }>();
  const id = (s: IdempotencyScope) => `${s.apiKeyId}/${s.operation}/${s.key}`;
  return {
    kept,
    claim(scope, fingerprint) {
      const held = kept.get(id(scope));
      if (held) return Promise.resolve(held);
      kept.set(id(scope), { fingerprint, result: null });
      return Promise.resolve(undefined);
    },
    keepResult(scope, result) {
      kept.get(id(scope))!.result = JSON.parse(JSON.stringify(result)) as unknown;
      return Promise.resolve();
    },
  };
}

describe('idempotency: requestFingerprint', () => {
  const body = { records: [{ subject: '01-001', values: { sbp: '120', dbp: '80' } }, { subject: '01-002' }] };

  it('is the same for the same data with members in another order', () => {
    const reordered = { records: [{ values: { dbp: '80', sbp: '120' }, subject: '01-001' }, { subject: '01-002' }] };
    expect(requestFingerprint('submitFormRecords', reordered)).to.equal(requestFingerprint('submitFormRecords', body));
  });

  for (const [name, other] of [
    ['a changed value', { records: [{ subject: '01-001', values: { sbp: '121', dbp: '80' } }, { subject: '01-002' }] }],
    ['array items in another order', { records: [{ subject: '01-002' }, { subject: '01-001', values: { sbp: '120', dbp: '80' } }] }],
    ['a value of another type', { records: [{ subject: '01-001', values: { sbp: 120, dbp: '80' } }, { subject: '01-002' }] }],
  ] as const) {
    it(`differs for ${name}`, () => {
      expect(requestFingerprint('submitFormRecords', other)).to.not.equal(requestFingerprint('submitFormRecords', body));
    });
  }

  it('differs per operation for the same body', () => {
    expect(requestFingerprint('createPatient', body)).to.not.equal(requestFingerprint('submitFormRecords', body));
  });
});

describe('idempotency: onceForKey', () => {
  const scope = { apiKeyId: 1, operation: 'createPatient', key: 'k-1' };
  const asKept = <T>(kept: T) => Promise.resolve(kept);

  it('runs the write once and replays its kept result for the same request', async () => {
    const store = fakeStore();
    let runs = 0;
    const run = () => Promise.resolve({ status: 201, body: { subject: `01-00${++runs}` } });
    expect(await onceForKey(store, scope, { site: '01' }, run, asKept)).to.deep.equal({ result: { status: 201, body: { subject: '01-001' } }, replayed: false });
    expect(await onceForKey(store, scope, { site: '01' }, run, asKept)).to.deep.equal({ result: { status: 201, body: { subject: '01-001' } }, replayed: true });
    expect(runs).to.equal(1);
  });

  it('refuses another request under a used key with idempotency_key_reused, without running it', async () => {
    const store = fakeStore();
    await onceForKey(store, scope, { site: '01' }, () => Promise.resolve('first'), asKept);
    let ran = false;
    const refused = await onceForKey(store, scope, { site: '02' }, () => { ran = true; return Promise.resolve('second'); }, asKept).catch((e: unknown) => e);
    expect(isDomainError(refused) && refused.code).to.equal('idempotency_key_reused');
    expect(ran).to.equal(false);
  });

  it('replays the kept result as `seen` gives it, and refuses the replay with what `seen` throws, without running the write', async () => {
    const store = fakeStore();
    await onceForKey(store, scope, { site: '01' }, () => Promise.resolve({ items: ['shown', 'hidden'] }), asKept);
    const failing = (): Promise<{ items: string[] }> => Promise.reject(new Error('ran again'));
    const shown = await onceForKey(store, scope, { site: '01' }, failing, (kept) => Promise.resolve({ items: kept.items.filter((i) => i !== 'hidden') }));
    expect(shown).to.deep.equal({ result: { items: ['shown'] }, replayed: true });
    const refused = await onceForKey(store, scope, { site: '01' }, failing, () => Promise.reject(new DomainError('unknown_subject'))).catch((e: unknown) => e);
    expect(isDomainError(refused) && refused.code).to.equal('unknown_subject');
  });
});
