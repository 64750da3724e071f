/**
 * An item's field names a table cell as `<table>.<column>` (with a row), any other field by its code.
 * These split it, so each caller does not index `split('.')` itself.
 */

/** The table of a cell's field, or a plain field's own code. */
export function tableOf(field: string): string {
  return field.split('.', 1)[0] ?? field;
}

/** A cell's field as its table and column; a plain field has no column (''). */
export function cellOf(field: string): { table: string; column: string } {
  const [table = field, column = ''] = field.split('.');
  return { table, column };
}
