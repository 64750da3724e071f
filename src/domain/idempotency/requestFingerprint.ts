import { createHash } from 'node:crypto';
import { canonical } from '../canonicalJson.js';

/**
 * SHA-256 (hex) of a request as the service understood it: the operation and its parsed, validated
 * input. A retry that writes the same data differently (members in another order, other blanks) is
 * the same request; one that changes any value is another (spec: "Retries without duplicates").
 */
export function requestFingerprint(operation: string, request: unknown): string {
  return createHash('sha256').update(JSON.stringify(canonical([operation, request]))).digest('hex');
}
