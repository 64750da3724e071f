import { expect } from 'chai';
import { parseFieldValue, typedOf } from '../../src/domain/records/fieldValue.js';
import type { ColumnDef } from '../../src/domain/studyDesign/types.js';

const integer: ColumnDef = { code: 'sbp', label: 'SBP', type: 'integer', required: false, unit: 'mm[Hg]', min: 70, max: 220 };
const decimal: ColumnDef = { code: 'temp', label: 'Temp', type: 'decimal', required: false, unit: 'Cel', decimals: 1 };
const anyDecimal: ColumnDef = { code: 'x', label: 'X', type: 'decimal', required: false };
const date: ColumnDef = { code: 'd', label: 'D', type: 'date', required: false };
const time: ColumnDef = { code: 't', label: 'T', type: 'time', required: false };
const yesno: ColumnDef = { code: 'y', label: 'Y', type: 'yesno', required: false };
const text: ColumnDef = { code: 'txt', label: 'Text', type: 'text', required: false };
const options = [{ code: '1', label: 'One' }, { code: '2', label: 'Two' }, { code: '3', label: 'Three' }];
const choice: ColumnDef = { code: 'c', label: 'C', type: 'choice', required: false, options };
const multi: ColumnDef = { code: 'm', label: 'M', type: 'multichoice', required: false, options };

type Case = [field: ColumnDef, raw: string, expected: { canonical: string; typed: unknown } | { code: string; params?: Record<string, unknown> }];

describe('records: parseFieldValue converts each value by its field type', () => {
  const cases: Case[] = [
    [integer, '120', { canonical: '120', typed: 120 }],
    [integer, '-5', { canonical: '-5', typed: -5 }],
    [integer, '007', { canonical: '7', typed: 7 }],
    [integer, ' 88 ', { canonical: '88', typed: 88 }],
    [integer, '-0', { canonical: '0', typed: 0 }],
    [integer, '999999999999999', { canonical: '999999999999999', typed: 999999999999999 }],
    [integer, '+5', { code: 'invalid_format', params: { expected: 'integer' } }],
    [integer, '12.0', { code: 'invalid_format', params: { expected: 'integer' } }],
    [integer, '1e3', { code: 'invalid_format', params: { expected: 'integer' } }],
    [integer, '12 0', { code: 'invalid_format', params: { expected: 'integer' } }],
    [integer, 'abc', { code: 'invalid_format', params: { expected: 'integer' } }],
    [integer, '1000000000000000', { code: 'invalid_format', params: { expected: 'integer' } }],
    [decimal, '36.6', { canonical: '36.6', typed: 36.6 }],
    [decimal, '37', { canonical: '37', typed: 37 }],
    [decimal, '36.0', { canonical: '36.0', typed: 36 }],
    [decimal, '-0.0', { canonical: '0.0', typed: 0 }],
    [decimal, '36.65', { code: 'too_many_decimals', params: { decimals: 1 } }],
    [decimal, '36,6', { code: 'invalid_format', params: { expected: 'decimal' } }],
    [decimal, '1,234', { code: 'invalid_format', params: { expected: 'decimal' } }],
    [decimal, '.5', { code: 'invalid_format', params: { expected: 'decimal' } }],
    [decimal, '5.', { code: 'invalid_format', params: { expected: 'decimal' } }],
    [decimal, 'NaN', { code: 'invalid_format', params: { expected: 'decimal' } }],
    [anyDecimal, '0012.5000', { canonical: '12.5000', typed: 12.5 }],
    [anyDecimal, '-0.050', { canonical: '-0.050', typed: -0.05 }],
    // 17 significant digits: normalised as text, so nothing is rounded away.
    [anyDecimal, '123456789012345.12', { canonical: '123456789012345.12', typed: 123456789012345.12 }],
    [date, '2026-03-01', { canonical: '2026-03-01', typed: '2026-03-01' }],
    [date, '2024-02-29', { canonical: '2024-02-29', typed: '2024-02-29' }],
    [date, '2026-02-29', { code: 'invalid_format', params: { expected: 'date' } }],
    [date, '01.03.2026', { code: 'invalid_format', params: { expected: 'date' } }],
    [date, '2026-3-1', { code: 'invalid_format', params: { expected: 'date' } }],
    [date, '2026-03-01T10:00', { code: 'invalid_format', params: { expected: 'date' } }],
    [time, '14:30', { canonical: '14:30', typed: '14:30' }],
    [time, '00:00', { canonical: '00:00', typed: '00:00' }],
    [time, '24:00', { code: 'invalid_format', params: { expected: 'time' } }],
    [time, '9:30', { code: 'invalid_format', params: { expected: 'time' } }],
    [time, '14:30:00', { code: 'invalid_format', params: { expected: 'time' } }],
    [yesno, 'yes', { canonical: 'yes', typed: true }],
    [yesno, 'No', { canonical: 'no', typed: false }],
    [yesno, 'true', { code: 'invalid_format', params: { expected: 'yesno' } }],
    [yesno, '1', { code: 'invalid_format', params: { expected: 'yesno' } }],
    [yesno, 'y', { code: 'invalid_format', params: { expected: 'yesno' } }],
    [choice, '2', { canonical: '2', typed: '2' }],
    [choice, '4', { code: 'not_an_option', params: { value: '4', options: ['1', '2', '3'] } }],
    [choice, 'Two', { code: 'not_an_option', params: { value: 'Two', options: ['1', '2', '3'] } }],
    [multi, '3,1', { canonical: '1,3', typed: ['1', '3'] }],
    [multi, '2', { canonical: '2', typed: ['2'] }],
    [multi, '1,1', { canonical: '1', typed: ['1'] }],
    [multi, '1,5', { code: 'not_an_option', params: { value: '5', options: ['1', '2', '3'] } }],
    [multi, ',', { code: 'not_an_option', params: { value: '', options: ['1', '2', '3'] } }],
    [text, '  headache after dosing ', { canonical: '  headache after dosing ', typed: '  headache after dosing ' }],
    [text, 'головная боль 😀', { canonical: 'головная боль 😀', typed: 'головная боль 😀' }],
    [text, 'x'.repeat(4000), { canonical: 'x'.repeat(4000), typed: 'x'.repeat(4000) }],
    [text, 'x'.repeat(4001), { code: 'too_long', params: { max: 4000 } }],
    [text, 'nul\u0000byte', { code: 'invalid_character' }],
    [text, 'lone \ud800 surrogate', { code: 'invalid_character' }],
  ];
  for (const [field, raw, expected] of cases) {
    it(`${field.type} ${JSON.stringify(raw.length > 40 ? `${raw.slice(0, 10)}…(${raw.length})` : raw)} → ${'code' in expected ? expected.code : expected.canonical}`, () => {
      const parsed = parseFieldValue(field, raw);
      if ('code' in expected) expect(parsed).to.deep.equal({ ok: false, ...expected });
      else expect(parsed).to.deep.equal({ ok: true, ...expected });
    });
  }
});

describe('records: typedOf gives saved canonical values their type for edit checks', () => {
  const cases: [ColumnDef, string, unknown][] = [
    [integer, '120', 120],
    [decimal, '36.65', 36.65],
    [yesno, 'yes', true],
    [yesno, 'no', false],
    [multi, '1,3', ['1', '3']],
    [date, '2026-03-01', '2026-03-01'],
    [text, 'abc', 'abc'],
  ];
  for (const [field, canonical, typed] of cases) {
    it(`${field.type} ${canonical}`, () => expect(typedOf(field, canonical)).to.deep.equal(typed));
  }
});
