import { createHash } from 'node:crypto';
import { DomainError } from '../errors.js';

/**
 * The opaque `next` token of a paging run: the last id returned, the run's watermark, and a digest
 * of the key and filters it was issued for, so a token passed with other filters is refused
 * instead of silently paging a different result.
 */
export interface PagingPosition {
  afterId: number;
  watermark: string;
}

export function filtersDigest(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

export function encodeToken(position: PagingPosition, digest: string): string {
  return Buffer.from(JSON.stringify({ a: position.afterId, w: position.watermark, f: digest })).toString('base64url');
}

/** An instant exactly as `toISOString` writes it (how the watermark was issued). */
function isIssuedInstant(value: string): boolean {
  const time = Date.parse(value);
  return !Number.isNaN(time) && new Date(time).toISOString() === value;
}

/** The token's position; anything but a token this service issued for these filters is `invalid_after`, never a 500. */
export function decodeToken(token: string, digest: string): PagingPosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new DomainError('invalid_after');
  }
  // Valid JSON need not be an object (`null`, `1`): check the shape before reading members.
  const { a, w, f } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { a?: unknown; w?: unknown; f?: unknown };
  // The watermark goes back to the client as it is, so only the exact form `encodeToken` writes is accepted.
  if (!Number.isSafeInteger(a) || (a as number) < 0 || typeof w !== 'string' || !isIssuedInstant(w) || f !== digest) {
    throw new DomainError('invalid_after');
  }
  return { afterId: a as number, watermark: w };
}
