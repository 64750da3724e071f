import { isStorableText } from '../storableText.js';
import type { ColumnDef } from '../studyDesign/types.js';

/** Why a value does not fit its field. */
type ValueProblem = 'invalid_format' | 'too_many_decimals' | 'not_an_option' | 'too_long' | 'invalid_character';

/** What a value sent as a string becomes: its canonical string (stored and read back) and the typed value rules see. */
export type ParsedValue =
  | { ok: true; canonical: string; typed: number | string | boolean | string[] }
  | { ok: false; code: ValueProblem; params?: Record<string, unknown> };

const MAX_TEXT = 4000;
const INTEGER = /^-?\d{1,15}$/;
// A dot only: "1,234" could be a decimal comma or a thousands separator, and guessing would store a wrong number.
const DECIMAL = /^-?(\d{1,15})(\.(\d{1,10}))?$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;

function isRealDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

/**
 * Converts one value, sent as a string, by its field's type (spec/openapi.yaml, "Study design and field
 * values"). Only the spellings the contract names are accepted, apart from surrounding blanks and the
 * case of `yes`/`no`: a value that needs guessing (`1,5`, `+3`, `true`) is refused, never reinterpreted.
 * Multiple choice is stored as option codes in the design's order.
 */
export function parseFieldValue(field: ColumnDef, raw: string): ParsedValue {
  const value = raw.trim();
  switch (field.type) {
    case 'integer': {
      if (!INTEGER.test(value)) return { ok: false, code: 'invalid_format', params: { expected: 'integer' } };
      const canonical = String(Number(value));
      return { ok: true, canonical, typed: Number(canonical) };
    }
    case 'decimal': {
      const match = DECIMAL.exec(value);
      if (!match) return { ok: false, code: 'invalid_format', params: { expected: 'decimal' } };
      const places = match[3]?.length ?? 0;
      if (field.decimals !== undefined && places > field.decimals) return { ok: false, code: 'too_many_decimals', params: { decimals: field.decimals } };
      // Normalised as text, not through a double: 17 significant digits must not come back rounded. The
      // fraction keeps its trailing zeros, because they are the precision measured (4.70 is not 4.7);
      // only the whole part's leading zeros say nothing, and a zero has no sign.
      const whole = (match[1] ?? '').replace(/^0+(?=\d)/, ''); // the whole part's group takes part in every match
      const digits = match[2] ? `${whole}${match[2]}` : whole;
      const canonical = /^[0.]+$/.test(digits) || !value.startsWith('-') ? digits : `-${digits}`;
      return { ok: true, canonical, typed: Number(canonical) };
    }
    case 'date':
      return isRealDate(value) ? { ok: true, canonical: value, typed: value } : { ok: false, code: 'invalid_format', params: { expected: 'date' } };
    case 'time':
      return TIME.test(value) ? { ok: true, canonical: value, typed: value } : { ok: false, code: 'invalid_format', params: { expected: 'time' } };
    case 'yesno': {
      const lower = value.toLowerCase();
      if (lower === 'yes') return { ok: true, canonical: 'yes', typed: true };
      if (lower === 'no') return { ok: true, canonical: 'no', typed: false };
      return { ok: false, code: 'invalid_format', params: { expected: 'yesno' } };
    }
    case 'choice':
      return field.options.some((o) => o.code === value)
        ? { ok: true, canonical: value, typed: value }
        : { ok: false, code: 'not_an_option', params: { value, options: field.options.map((o) => o.code) } };
    case 'multichoice': {
      const codes = [...new Set(value.split(',').map((c) => c.trim()).filter(Boolean))];
      const unknown = codes.filter((c) => !field.options.some((o) => o.code === c));
      if (codes.length === 0 || unknown.length > 0) return { ok: false, code: 'not_an_option', params: { value: unknown.join(','), options: field.options.map((o) => o.code) } };
      const ordered = field.options.map((o) => o.code).filter((c) => codes.includes(c));
      return { ok: true, canonical: ordered.join(','), typed: ordered };
    }
    case 'text':
      if (raw.length > MAX_TEXT) return { ok: false, code: 'too_long', params: { max: MAX_TEXT } };
      if (!isStorableText(raw)) return { ok: false, code: 'invalid_character' };
      return { ok: true, canonical: raw, typed: raw };
  }
}

/**
 * The typed value of a canonical string already saved (for edit checks over a merged record). It does
 * not validate again: a value saved under an older rule still reaches the checks with its type.
 */
export function typedOf(field: ColumnDef, canonical: string): number | string | boolean | string[] {
  switch (field.type) {
    case 'integer':
    case 'decimal':
      return Number(canonical);
    case 'yesno':
      return canonical === 'yes';
    case 'multichoice':
      return canonical.split(',');
    default:
      return canonical;
  }
}
