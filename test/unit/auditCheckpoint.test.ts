import { expect } from 'chai';
import { CHAIN_START, chainHash, type ChainedContent } from '../../src/domain/auditChain.js';
import { describeVerdict, judgeTrail, type AuditCheckpoint, type CheckpointStore } from '../../src/domain/auditCheckpoint.js';
import { checkpointAuditTrail } from '../../src/domain/studies/checkpointAuditTrail.js';
import type { AuditStore, Study, StudyStore } from '../../src/domain/stores.js';
import { at } from '../helpers/only.js';

/** A whole chain of n rows of study 1, ids from 1. */
function chain(n: number, author = 'op') {
  let prev = CHAIN_START;
  return Array.from({ length: n }, (_, i) => {
    const content: ChainedContent = {
      studyId: 1, at: '2026-11-25T10:00:00.000Z', actorType: 'operator', actorId: null, author, reason: '', action: `a${i}`,
      patientId: null, recordId: null, fieldCode: null, oldValue: null, newValue: null, details: {},
    };
    const row = { ...content, id: i + 1, prevHash: prev, hash: chainHash(prev, content) };
    prev = row.hash;
    return row;
  });
}

function anchor(rows: ReturnType<typeof chain>, n: number): AuditCheckpoint {
  const last = at(rows, n - 1, 'the chain');
  return { study: 'S', studyId: 1, rows: n, lastId: last.id, lastHash: last.hash, at: '2026-11-25T11:00:00.000Z' };
}

describe('judgeTrail', () => {
  const rows = chain(6);
  const cases: { name: string; trail: ReturnType<typeof chain>; valid?: boolean; expected: Record<string, unknown>; says: RegExp }[] = [
    { name: 'a trail that grew since its checkpoint', trail: rows, expected: { ok: true, rows: 6 }, says: /^6 rows chained; rows 1\.\.5 match/ },
    { name: 'a truncated trail', trail: [], expected: { ok: false, rows: 0, problem: 'missing_after_checkpoint', missingFrom: 1, missingTo: 5 }, says: /^missing rows 1\.\.5 after checkpoint of 2026-11-25T11:00:00.000Z$/ },
    { name: 'the newest rows deleted', trail: rows.slice(0, 3), expected: { ok: false, problem: 'missing_after_checkpoint', missingFrom: 4, missingTo: 5 }, says: /^missing rows 4\.\.5 after/ },
    { name: 'a whole chain rebuilt after the checkpoint', trail: chain(6, 'forger'), expected: { ok: false, problem: 'diverged_from_checkpoint', row: 5 }, says: /^row 5 is not the row the checkpoint/ },
    { name: 'an altered row', trail: rows.map((r, i) => (i === 1 ? { ...r, author: 'forger' } : r)), expected: { ok: false, problem: 'altered', id: 2 }, says: /audit row of id 2 was altered/ },
    { name: 'a middle row deleted', trail: [...rows.slice(0, 2), ...rows.slice(3)], expected: { ok: false, problem: 'missing_before', id: 4 }, says: /before the audit row of id 4/ },
    { name: 'a checkpoint whose signature fails', trail: rows, valid: false, expected: { ok: false, problem: 'checkpoint_signature_invalid' }, says: /valid signature/ },
  ];
  for (const c of cases) {
    it(`judges ${c.name}`, () => {
      const verdict = judgeTrail(c.trail, { checkpoint: anchor(rows, 5), signatureValid: c.valid ?? true });
      expect(verdict).to.include(c.expected);
      expect(describeVerdict(verdict)).to.match(c.says);
    });
  }
});

describe('checkpointAuditTrail', () => {
  const study = { id: 1, code: 'S' } as Study;
  function world(rows: ReturnType<typeof chain>, latest?: AuditCheckpoint) {
    const written: AuditCheckpoint[] = latest ? [latest] : [];
    const stores = {
      studies: { findByCode: () => Promise.resolve(study) } as unknown as StudyStore,
      audit: { chain: () => Promise.resolve(rows), lockCheckpoints: () => Promise.resolve() } as unknown as AuditStore,
    };
    const checkpoints: CheckpointStore = {
      latest: () => {
        const checkpoint = written.at(-1);
        return Promise.resolve(checkpoint ? { checkpoint, signatureValid: true } : undefined);
      },
      append: (c) => {
        written.push(c);
        return Promise.resolve();
      },
    };
    return { stores, checkpoints, written };
  }
  const now = new Date('2026-11-25T12:00:00.000Z');

  it('writes the head of a moved chain, and nothing when it stands still or is empty', async () => {
    const rows = chain(4);
    const w = world(rows, anchor(rows, 2));
    expect(await checkpointAuditTrail(w.stores, w.checkpoints, 'S', now)).to.deep.equal({ written: true, rows: 4, at: now.toISOString(), accepted: undefined });
    expect(w.written.at(-1)).to.deep.include({ rows: 4, lastId: 4, lastHash: rows[3]?.hash });
    expect(await checkpointAuditTrail(w.stores, w.checkpoints, 'S', now)).to.deep.equal({ written: false, reason: 'unchanged', rows: 4 });
    const empty = world([]);
    expect(await checkpointAuditTrail(empty.stores, empty.checkpoints, 'S', now)).to.deep.equal({ written: false, reason: 'empty', rows: 0 });
  });

  it('never signs a shortened trail, unless an operator accepts the loss with a reason', async () => {
    const rows = chain(4);
    const w = world(rows.slice(0, 3), anchor(rows, 4));
    expect(await checkpointAuditTrail(w.stores, w.checkpoints, 'S', now)).to.include({ written: false, reason: 'broken' });
    expect(w.written).to.have.length(1);
    const accepted = await checkpointAuditTrail(w.stores, w.checkpoints, 'S', now, 'restored');
    expect(accepted).to.include({ written: true, rows: 3 });
    expect(w.written.at(-1)!.accepted).to.match(/^missing rows 4\.\.4 after checkpoint of .*; accepted: restored$/);
  });
});
