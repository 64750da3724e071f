/**
 * The command line's output for people (without `--json`): a single object as aligned `name: value`
 * lines, a list of objects (keys, reads) as a table with a header and aligned columns, each after the
 * other members. `--json` prints the same object as JSON, for scripts.
 */
type Value = unknown;

/** A value as one cell or line: lists joined with commas, an absent value as "-", times as ISO text. */
function cell(value: Value): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(cell).join(',');
  if (typeof value === 'object') return Object.entries(value).map(([k, v]) => `${k}=${cell(v)}`).join(' ');
  if (typeof value === 'string') return value;
  // The rest of a command's JSON-like output: numbers and booleans.
  return typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? String(value) : '-';
}

const isRowList = (value: Value): value is Record<string, Value>[] =>
  Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date));

/** Rows as a table: one column per member of any row, each as wide as its widest cell. */
export function table(rows: Record<string, Value>[]): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const lines = [columns, ...rows.map((r) => columns.map((c) => cell(r[c])))];
  const widths = columns.map((_, i) => Math.max(...lines.map((l) => l[i]?.length ?? 0)));
  return lines.map((l) => l.map((c, i) => (i === l.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd()).join('\n');
}

export function plainText(result: Record<string, Value>): string {
  const entries = Object.entries(result);
  const lines = entries.filter(([, v]) => !isRowList(v));
  const width = Math.max(0, ...lines.map(([name]) => name.length));
  const parts = lines.length > 0 ? [lines.map(([name, v]) => `${`${name}:`.padEnd(width + 1)} ${cell(v)}`).join('\n')] : [];
  for (const [name, rows] of entries) if (isRowList(rows)) parts.push(`${name} (${rows.length}):\n${table(rows)}`);
  return `${parts.join('\n\n')}\n`;
}
