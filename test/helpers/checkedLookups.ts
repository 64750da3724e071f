/**
 * Look-ups a test knows will find something, for code under `noUncheckedIndexedAccess`: each says what
 * it expects and fails the test with a message naming it, where a `!` would let a missing element
 * surface later as a TypeError far from its cause. For lists of defined values (a test's rows and
 * answers), where `undefined` can only mean "not there".
 */

/** The element at `index` (negative counts from the end), failing when the list is shorter. */
export function itemAt<T>(items: readonly T[], index: number): T {
  const item = items.at(index);
  if (item === undefined) throw new Error(`expected an element at index ${index}, the list has ${items.length}`);
  return item;
}

/** The one element of a list that must hold exactly one. */
export function only<T>(items: readonly T[]): T {
  if (items.length !== 1) throw new Error(`expected exactly one element, the list has ${items.length}`);
  return itemAt(items, 0);
}

/** A value a test has just written or read, failing with `what` when it is missing. */
export function defined<T>(value: T | null | undefined, what: string): T {
  if (value === undefined || value === null) throw new Error(`expected ${what}, found ${String(value)}`);
  return value;
}
