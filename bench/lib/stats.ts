/**
 * Summaries of repeated measurements. Runs are few (3–7), so percentiles are nearest-rank over the
 * runs themselves: with five runs the p95 is the largest, with three the median is the middle one.
 */

import { at } from '../../test/helpers/only.js';

/** The value at rank ceil(q·n) of the sorted values (nearest-rank percentile). */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return at(sorted, rank - 1, 'the sorted values');
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const middle = at(sorted, mid, 'the sorted values');
  return sorted.length % 2 === 1 ? middle : (at(sorted, mid - 1, 'the sorted values') + middle) / 2;
}

/** Rounds for reporting: three significant digits are all a shared 2-core machine can stand behind. */
export function round(value: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(value))));
  return Number(value.toFixed(Math.min(digits, 4)));
}

/** Milliseconds elapsed while `fn` ran. */
export async function timed<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}
