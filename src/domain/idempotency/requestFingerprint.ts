import { createHash } from 'node:crypto';

/** The same JSON data written one way: object members sorted by name at every depth, arrays in their order. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    return Object.fromEntries(Object.keys(object).sort().map((name) => [name, canonical(object[name])]));
  }
  return value;
}

/**
 * SHA-256 (hex) of a request as the service understood it: the operation and its parsed, validated
 * input. A retry that writes the same data differently (members in another order, other blanks) is
 * the same request; one that changes any value is another (spec: "Retries without duplicates").
 */
export function requestFingerprint(operation: string, request: unknown): string {
  return createHash('sha256').update(JSON.stringify(canonical([operation, request]))).digest('hex');
}
