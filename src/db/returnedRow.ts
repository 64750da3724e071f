/**
 * The row an `insert … returning` of one row gives back. Such a statement always returns its row (a
 * conflict is an error, not an empty answer), so none is a bug, reported as one rather than as a
 * TypeError on `undefined` further on.
 */
export function returnedRow<T>(rows: readonly T[]): T {
  const [row] = rows;
  if (row === undefined) throw new Error('An insert returned no row');
  return row;
}
