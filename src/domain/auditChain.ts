import { createHash } from 'node:crypto';

/**
 * The hash chain of a study's audit trail: each row's hash covers its content and the previous
 * row's hash, so changing or removing any row breaks every link after it.
 */
export interface ChainedContent {
  studyId: number;
  at: string;
  actorType: string;
  actorId: number | null;
  author: string;
  reason: string;
  action: string;
  patientId: number | null;
  recordId: number | null;
  fieldCode: string | null;
  oldValue: string | null;
  newValue: string | null;
  details: unknown;
}

/** JSON with object keys sorted at every depth: jsonb does not keep key order, the hash must not depend on it. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export const CHAIN_START = '0'.repeat(64);

export function chainHash(prevHash: string, row: ChainedContent): string {
  const content = [row.studyId, row.at, row.actorType, row.actorId, row.author, row.reason, row.action, row.patientId, row.recordId, row.fieldCode, row.oldValue, row.newValue, row.details];
  return createHash('sha256').update(prevHash).update(canonical(content)).digest('hex');
}

export type ChainVerdict = { ok: true; rows: number } | { ok: false; rows: number; id: number; problem: 'altered' | 'missing_before' };

/** Walks a study's rows in id order and names the first one whose link or content does not hold. */
export function verifyChain(rows: (ChainedContent & { id: number; prevHash: string | null; hash: string | null })[]): ChainVerdict {
  let prev = CHAIN_START;
  for (const row of rows) {
    if (row.prevHash !== prev) return { ok: false, rows: rows.length, id: row.id, problem: 'missing_before' };
    if (row.hash !== chainHash(prev, row)) return { ok: false, rows: rows.length, id: row.id, problem: 'altered' };
    prev = row.hash;
  }
  return { ok: true, rows: rows.length };
}
