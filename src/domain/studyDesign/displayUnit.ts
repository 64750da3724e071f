/** Units whose UCUM code reads differently from the way people write them. */
const SHOWN_AS: Record<string, string> = {
  'mm[Hg]': 'mmHg',
  Cel: '°C',
  '[degF]': '°F',
  '[in_i]': 'in',
  '[lb_av]': 'lb',
  '[IU]': 'IU',
  '[iU]': 'IU',
  'mL/min/{1.73_m2}': 'mL/min/1.73 m²',
};

const SUPERSCRIPT: Record<string, string> = { 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

/**
 * A field's unit as people read it (mmHg, 10³/µL, °C), for the portal; the design, the API and the
 * database keep the UCUM code (mm[Hg], 10*3/uL, Cel), which machines exchange. Codes not in the
 * table get the general rules: powers of ten as superscripts, `u` as the micro prefix, and an
 * annotation's braces dropped; anything else is shown as its code.
 */
export function displayUnit(ucum: string): string {
  const known = SHOWN_AS[ucum];
  if (known !== undefined) return known;
  return ucum
    .replace(/10\*(\d+)/g, (_, power: string) => `10${[...power].map((d) => SUPERSCRIPT[d]).join('')}`)
    .replace(/(^|[/.*])u(?=(g|L|l|mol|m|U|eq|s)\b)/g, '$1µ')
    .replace(/\{([^}]*)\}/g, '$1');
}
