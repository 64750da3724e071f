/**
 * Checked reads for tests, where the index type allows `undefined` (`noUncheckedIndexedAccess`) but the
 * test knows the element is there: a missing one fails the test with a message naming it, not a
 * `TypeError` on `undefined` three lines on.
 */

/** The one element of `items`; fails unless there is exactly one. */
export function only<T>(items: readonly T[], what = 'the list'): T {
  if (items.length !== 1) throw new Error(`expected exactly one element in ${what}, found ${items.length}`);
  return at(items, 0, what);
}

/** The element at `index` (from 0) of `items`; fails when there is none. */
export function at<T>(items: readonly T[], index: number, what = 'the list'): T {
  if (index < 0 || index >= items.length) throw new Error(`expected an element at ${index} in ${what}, which has ${items.length}`);
  return items.at(index) as T;
}

/** `value`, which the test knows to be there; fails, naming `what`, when it is `undefined` or `null`. */
export function present<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) throw new Error(`expected ${what} to be present`);
  return value;
}
