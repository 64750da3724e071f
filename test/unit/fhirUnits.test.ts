import { createRequire } from 'node:module';
import type ucumModule from '@lhncbc/ucum-lhc';
import { expect } from 'chai';
import type { DecimalFieldDef, IntegerFieldDef } from '../../src/domain/studyDesign/types.js';
import { convertUnit, formatForField, roundForField } from '../../src/domain/fhir/unitConversion.js';

const decimal = (decimals?: number): DecimalFieldDef => ({ code: 'x', label: 'X', required: false, type: 'decimal', ...(decimals === undefined ? {} : { decimals }) });
const integer: IntegerFieldDef = { code: 'x', label: 'X', required: false, type: 'integer' };

describe('unitConversion', () => {
  describe('convertUnit', () => {
    // Expected values by hand: mg/dL → mmol/L is × 10 / M, mg/dL → µmol/L is × 10 000 / M (M in g/mol);
    // 1 [lb_av] = 0.45359237 kg; 1 [in_i] = 2.54 cm; °C = (°F − 32) × 5/9.
    const cases: [string, number, string, string, number | undefined, number][] = [
      ['glucose mg/dL → mmol/L (M 180.156)', 100, 'mg/dL', 'mmol/L', 180.156, 5.550744909966919],
      ['glucose mmol/L → mg/dL', 5.55, 'mmol/L', 'mg/dL', 180.156, 99.98658],
      ['creatinine mg/dL → µmol/L (M 113.12)', 1.1, 'mg/dL', 'umol/L', 113.12, 97.24186704384726],
      ['cholesterol mg/dL → mmol/L (M 386.65)', 193.35554829791818, 'mg/dL', 'mmol/L', 386.65, 5.000790076242549],
      ['pounds → kg', 185, '[lb_av]', 'kg', undefined, 83.91458845],
      ['kg → pounds', 83.91458845, 'kg', '[lb_av]', undefined, 185],
      ['inches → cm', 66.89999999999999, '[in_i]', 'cm', undefined, 169.926],
      ['cm → inches', 254, 'cm', '[in_i]', undefined, 100],
      ['°F → °C', 98.6, '[degF]', 'Cel', undefined, 37],
      ['°F → °C below zero', 14, '[degF]', 'Cel', undefined, -10],
      ['°C → K', 36.6, 'Cel', 'K', undefined, 309.75],
      ['haemoglobin g/dL → g/L', 12.8, 'g/dL', 'g/L', undefined, 128],
      ['10*3/uL → 10*9/L', 7.2, '10*3/uL', '10*9/L', undefined, 7.2],
      ['the same unit', 44, '/min', '/min', undefined, 44],
      ['the same annotation', 61.2, 'mL/min/{1.73_m2}', 'mL/min/{1.73_m2}', undefined, 61.2],
    ];
    for (const [name, value, from, to, molarMass, expected] of cases) {
      it(`converts ${name}`, () => {
        expect(convertUnit(value, from, to, molarMass)).to.be.closeTo(expected, Math.abs(expected) * 1e-9 + 1e-9);
      });
    }

    const notConvertible: [string, number, string, string, number | undefined][] = [
      ['mass into substance concentration without a molar mass', 100, 'mg/dL', 'mmol/L', undefined],
      ['eGFR mL/min into mL/min/{1.73_m2} (UCUM would call the annotation 1)', 60, 'mL/min', 'mL/min/{1.73_m2}', undefined],
      ['units of different kinds', 80, 'kg', 'mm[Hg]', undefined],
      ['a pain score into kg', 3, '{score}', 'kg', undefined],
      ['a unit that is not UCUM (mmHg)', 120, 'mmHg', 'mm[Hg]', undefined],
      ['a SNOMED CT unit code', 122, '258814008', 'umol/L', 113.12],
    ];
    for (const [name, value, from, to, molarMass] of notConvertible) {
      it(`does not convert ${name}`, () => {
        expect(convertUnit(value, from, to, molarMass)).to.equal(null);
      });
    }

    it('asks the library once per unit pair, however often the pair comes', () => {
      // getInstance() makes a new object each time: the prototype is what every instance shares. Required as
      // unitConversion.ts loads it, so that both see the same module.
      const ucum = createRequire(import.meta.url)('@lhncbc/ucum-lhc') as typeof ucumModule;
      const library = ucum.UcumLhcUtils.prototype;
      // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be put back on the prototype; it is only ever applied to `this`.
      const original = library.convertUnitTo;
      let calls = 0;
      library.convertUnitTo = function (this: typeof library, ...args: Parameters<typeof original>) {
        calls++;
        return original.apply(this, args);
      };
      try {
        let sum = 0;
        for (let i = 0; i < 10_000; i++) sum += convertUnit(i, 'mg/dL', 'mmol/L', 180.151) ?? 0;
        expect(sum).to.be.closeTo((9_999 * 10_000) / 2 / 18.0151, 1e-3);
        expect(calls).to.equal(1);
      } finally {
        library.convertUnitTo = original;
      }
    });

    it('prints nothing of a unit string it cannot parse (the library would, on stdout among the access log)', () => {
      const printed: string[] = [];
      const log = console.log;
      const write = process.stdout.write.bind(process.stdout);
      console.log = (...args: unknown[]) => { printed.push(args.join(' ')); };
      process.stdout.write = (chunk: string | Uint8Array) => { printed.push(String(chunk)); return true; };
      try {
        expect(convertUnit(1, "m'; drop table records", 'mmol/L')).to.equal(null);
        expect(convertUnit(1, '{"level":"error","msg":"forged"}', 'mmol/L')).to.equal(null);
      } finally {
        console.log = log;
        process.stdout.write = write;
      }
      expect(printed).to.deep.equal([]);
    });
  });

  describe('rounding and writing for a field', () => {
    const cases: [string, number, DecimalFieldDef | IntegerFieldDef, number, string][] = [
      ['glucose 5.5507 mmol/L at 1 decimal', 5.550744909966919, decimal(1), 5.6, '5.6'],
      ['cholesterol at 2 decimals is written with both', 5.000790076242549, decimal(2), 5, '5.00'],
      ['potassium 4.7 at 2 decimals', 4.7, decimal(2), 4.7, '4.70'],
      ['haemoglobin 5 at 1 decimal', 5, decimal(1), 5, '5.0'],
      ['a half rounds away from zero', 1.005, decimal(2), 1.01, '1.01'],
      ['a negative half rounds away from zero', -2.5, integer, -3, '-3'],
      ['creatinine 97.24 µmol/L at 0 decimals', 97.24186704384726, decimal(0), 97, '97'],
      ['an integer field', 123.7373447247063, integer, 124, '124'],
      ['minus zero is written without its sign', -0.04, decimal(1), -0, '0.0'],
      ['a decimal field without decimals drops trailing zeros', 5.5, decimal(), 5.5, '5.5'],
      ['a decimal field without decimals: 3 significant digits', 5.550744909966919, decimal(), 5.55, '5.55'],
      ['a small number keeps 3 significant digits', 0.012345, decimal(), 0.0123, '0.0123'],
      ['integer digits are never rounded away', 123.456, decimal(), 123, '123'],
      ['at most 6 decimals', 1e-7, decimal(), 0, '0'],
    ];
    for (const [name, value, field, rounded, written] of cases) {
      it(`${name}: ${value} → ${written}`, () => {
        expect(roundForField(value, field)).to.equal(rounded);
        expect(formatForField(value, field)).to.equal(written);
      });
    }
  });
});
