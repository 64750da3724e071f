/**
 * UCUM unit conversion for imported quantities (https://ucum.org), through the National Library of
 * Medicine's `@lhncbc/ucum-lhc`, and the rounding of converted numbers to a field's precision.
 */
import { createRequire } from 'node:module';
import type ucum from '@lhncbc/ucum-lhc';
import type { DecimalFieldDef, IntegerFieldDef } from '../studyDesign/types.js';

/** A field that holds a number in a unit. */
export type NumericFieldDef = IntegerFieldDef | DecimalFieldDef;

type Converter = (value: number) => number;

type UcumUtils = ReturnType<typeof ucum.UcumLhcUtils.getInstance>;
let loaded: UcumUtils | undefined;

/**
 * The library, loaded by the first conversion rather than at start-up: its unit tables add about 14 MB to a
 * process's resident memory, also to one that never imports FHIR, such as one serving the exports whose peak
 * memory issue 23.3 bounds (bench/README.md, "Export memory"), as the FHIR R4 validators are (validateR4.ts).
 */
function utils(): UcumUtils {
  loaded ??= (createRequire(import.meta.url)('@lhncbc/ucum-lhc') as typeof ucum).UcumLhcUtils.getInstance();
  return loaded;
}

/**
 * Asks the library without letting it print: for some unit strings it cannot parse it writes the string,
 * as the file sent it, with console.log. On stdout, among the access log's JSON lines, that would be
 * client text in the service's logs (a forged log line, or a patient's data). The call is synchronous,
 * so nothing else logs while console.log is silenced.
 */
function convertQuietly(...args: Parameters<UcumUtils['convertUnitTo']>): ReturnType<UcumUtils['convertUnitTo']> {
  const log = console.log;
  console.log = () => undefined;
  try {
    return utils().convertUnitTo(...args);
  } finally {
    console.log = log;
  }
}

/**
 * Converters by unit pair and molar mass. A file repeats a handful of units thousands of times, and the
 * library parses both unit strings on every call, so each pair is resolved once per process. The number
 * of distinct pairs in real files is small: the units that occur in them times the study's field units.
 */
const converters = new Map<string, Converter | null>();
/**
 * A bound on that cache, since the unit strings come from the files: a hostile file with a million made-up
 * units would otherwise grow it for the life of the process. Far above what real files hold.
 */
const MAX_CONVERTERS = 10_000;

/**
 * Converts a number from one UCUM unit to another.
 *
 * @param molarMass - g/mol of the substance, for converting between mass and substance concentrations
 *   (glucose 100 mg/dL → 5.55 mmol/L with 180.156). Without it such a pair is not convertible.
 * @returns the converted number, not rounded; or null when either unit is not valid UCUM, the units
 *   measure different things, or their annotations differ.
 */
export function convertUnit(value: number, fromUnit: string, toUnit: string, molarMass?: number): number | null {
  const converter = converterFor(fromUnit, toUnit, molarMass);
  return converter ? converter(value) : null;
}

function converterFor(fromUnit: string, toUnit: string, molarMass: number | undefined): Converter | null {
  const key = `${fromUnit}\u0000${toUnit}\u0000${molarMass ?? ''}`;
  let converter = converters.get(key);
  if (converter === undefined) {
    converter = resolveConverter(fromUnit, toUnit, molarMass);
    if (converters.size >= MAX_CONVERTERS) converters.clear();
    converters.set(key, converter);
  }
  return converter;
}

function resolveConverter(fromUnit: string, toUnit: string, molarMass: number | undefined): Converter | null {
  if (fromUnit === toUnit) return (value) => value;
  // UCUM treats an annotation such as {1.73_m2} as the unit 1, so the library happily converts eGFR in
  // mL/min into mL/min/{1.73_m2}. The annotation is the point of such units (a rate per standard body
  // surface), so units whose annotations differ are not convertible.
  if (annotations(fromUnit) !== annotations(toUnit)) return null;
  const options = molarMass === undefined ? {} : { molecularWeight: molarMass };
  const probe = convertQuietly(fromUnit, 1, toUnit, options);
  if (probe.status !== 'succeeded' || probe.toVal === null || !Number.isFinite(probe.toVal)) return null;
  // Only special units (Cel, [degF], pH and the like) are not proportional; ask the library each time.
  if (probe.fromUnit?.isSpecial_ || probe.toUnit?.isSpecial_) {
    return (value) => convertQuietly(fromUnit, value, toUnit, options).toVal ?? Number.NaN;
  }
  const factor = probe.toVal;
  return (value) => value * factor;
}

function annotations(unit: string): string {
  return (unit.match(/\{[^}]*\}/g) ?? []).sort().join('');
}

/**
 * Rounds a number to the precision the field keeps: `decimals` for a decimal field that sets it, none
 * for an integer field. A decimal field without `decimals` keeps three significant digits but never
 * rounds away integer digits, and at most 6 decimals (5.5507 → 5.55, 0.012345 → 0.0123, 123.456 → 123),
 * which is finer than any laboratory reports and coarse enough to hide conversion noise.
 * Halves round away from zero, as laboratories round.
 */
export function roundForField(value: number, field: NumericFieldDef): number {
  return roundTo(value, decimalsFor(value, field));
}

/**
 * A number written as the records call expects it for the field: digits with an optional leading `-`
 * and a dot. A field that sets `decimals` gets exactly that many (`5.0`, `4.70`), as the eCRF shows the
 * value and a laboratory reports it; a decimal field without `decimals` drops trailing zeros (`5.55`,
 * `123`), since those digits would claim a precision nobody stated.
 */
export function formatForField(value: number, field: NumericFieldDef): string {
  const decimals = decimalsFor(value, field);
  const text = roundTo(value, decimals).toFixed(decimals);
  const trimmed = field.type === 'decimal' && field.decimals === undefined && text.includes('.') ? text.replace(/\.?0+$/, '') : text;
  return /^-0(\.0*)?$/.test(trimmed) ? trimmed.slice(1) : trimmed;
}

function decimalsFor(value: number, field: NumericFieldDef): number {
  if (field.type === 'integer') return 0;
  if (field.decimals !== undefined) return field.decimals;
  if (value === 0 || !Number.isFinite(value)) return 0;
  const integerDigits = Math.floor(Math.log10(Math.abs(value))) + 1;
  return Math.min(6, Math.max(0, 3 - integerDigits));
}

function roundTo(value: number, decimals: number): number {
  // Shifting through the exponent avoids binary artefacts such as 1.005 * 100 = 100.49999999999999.
  const magnitude = Math.abs(value);
  const text = String(magnitude);
  const shifted = text.includes('e') ? magnitude * 10 ** decimals : Number(`${text}e${decimals}`);
  const rounded = Math.round(shifted) / 10 ** decimals;
  return value < 0 ? -rounded : rounded;
}
