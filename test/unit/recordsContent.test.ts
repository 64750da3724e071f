import { expect } from 'chai';
import {
  changedFields, completenessIssues, EMPTY_CONTENT, mergeContent, overwrittenFields, typedValues, type RecordContent, type SentContent,
} from '../../src/domain/records/recordContent.js';
import type { FormDef } from '../../src/domain/studyDesign/types.js';

const form: FormDef = {
  code: 'vs', name: 'Vital signs', team: 'all', fields: [
    { code: 'vsdate', label: 'Date', type: 'date', required: true },
    { code: 'sbp', label: 'SBP', type: 'integer', required: true, min: 70, max: 220 },
    { code: 'temp', label: 'Temp', type: 'decimal', required: false, decimals: 1 },
    { code: 'smoker', label: 'Smoker', type: 'yesno', required: false },
    {
      code: 'meds', label: 'Medications', type: 'table', required: false, columns: [
        { code: 'name', label: 'Name', type: 'text', required: true },
        { code: 'dose', label: 'Dose', type: 'decimal', required: false, decimals: 2 },
        { code: 'start', label: 'Start', type: 'date', required: false },
      ],
    },
  ],
};

const saved: RecordContent = {
  values: { vsdate: '2026-03-01', sbp: '120', temp: '36.6' },
  notDone: { smoker: 'UNK' },
  tables: { meds: [{ name: 'Aspirin', dose: '100' }] },
};

describe('records: mergeContent applies what is sent onto what is saved', () => {
  const cases: { name: string; base: RecordContent; sent: SentContent; content?: RecordContent; issues?: { field: string; code: string }[] }[] = [
    {
      name: 'a new record takes the converted values, marks and rows',
      base: EMPTY_CONTENT,
      sent: { values: { vsdate: '2026-03-02', sbp: ' 0130', temp: '' }, not_done: { smoker: 'ND' }, tables: { meds: [{ name: 'Aspirin', dose: '75.50', start: '' }] } },
      content: { values: { vsdate: '2026-03-02', sbp: '130' }, notDone: { smoker: 'ND' }, tables: { meds: [{ name: 'Aspirin', dose: '75.50' }] } },
    },
    {
      name: 'an update replaces only the fields sent and keeps the others',
      base: saved,
      sent: { values: { sbp: '125' } },
      content: { ...saved, values: { ...saved.values, sbp: '125' } },
    },
    {
      name: '"" empties a field',
      base: saved,
      sent: { values: { temp: '' } },
      content: { ...saved, values: { vsdate: '2026-03-01', sbp: '120' } },
    },
    {
      name: 'a value replaces a mark, and a mark replaces a value',
      base: saved,
      sent: { values: { smoker: 'no' }, not_done: { temp: 'ND' } },
      content: { values: { vsdate: '2026-03-01', sbp: '120', smoker: 'no' }, notDone: { temp: 'ND' }, tables: saved.tables },
    },
    {
      name: 'a mark with an empty value is the mark',
      base: saved,
      sent: { values: { temp: '' }, not_done: { temp: 'NA' } },
      content: { values: { vsdate: '2026-03-01', sbp: '120' }, notDone: { smoker: 'UNK', temp: 'NA' }, tables: saved.tables },
    },
    {
      name: 'a table sent replaces all its rows',
      base: saved,
      sent: { tables: { meds: [{ name: 'Metformin' }, { name: 'Ramipril', start: '2025-01-01' }] } },
      content: { ...saved, tables: { meds: [{ name: 'Metformin' }, { name: 'Ramipril', start: '2025-01-01' }] } },
    },
    {
      name: 'a date cell may hold a mark instead of a date (an ended medication whose stop date is unknown)',
      base: EMPTY_CONTENT,
      sent: { tables: { meds: [{ name: 'Penicillin', start: 'UNK' }, { name: 'Aspirin', start: ' ND ' }] } },
      content: { ...EMPTY_CONTENT, tables: { meds: [{ name: 'Penicillin', start: 'UNK' }, { name: 'Aspirin', start: 'ND' }] } },
    },
    { name: 'a mark in a number cell', base: EMPTY_CONTENT, sent: { tables: { meds: [{ name: 'A', dose: 'UNK' }] } }, issues: [{ field: 'meds[0].dose', code: 'invalid_format' }] },
    {
      name: 'an empty table empties it',
      base: saved,
      sent: { tables: { meds: [] } },
      content: { ...saved, tables: {} },
    },
    { name: 'an unknown field', base: EMPTY_CONTENT, sent: { values: { sbpp: '120' } }, issues: [{ field: 'sbpp', code: 'unknown_field' }] },
    { name: 'an unknown field in not_done', base: EMPTY_CONTENT, sent: { not_done: { pulse: 'ND' } }, issues: [{ field: 'pulse', code: 'unknown_field' }] },
    { name: 'an unknown table', base: EMPTY_CONTENT, sent: { tables: { drugs: [] } }, issues: [{ field: 'drugs', code: 'unknown_field' }] },
    { name: 'an unknown column, with its row', base: EMPTY_CONTENT, sent: { tables: { meds: [{ name: 'A' }, { name: 'B', route: 'po' }] } }, issues: [{ field: 'meds[1].route', code: 'unknown_field' }] },
    { name: 'a bad cell, with its row and column', base: EMPTY_CONTENT, sent: { tables: { meds: [{ name: 'A', dose: '1,5' }] } }, issues: [{ field: 'meds[0].dose', code: 'invalid_format' }] },
    { name: 'a table sent in values', base: EMPTY_CONTENT, sent: { values: { meds: 'Aspirin' } }, issues: [{ field: 'meds', code: 'table_in_values' }] },
    { name: 'a plain field sent in tables', base: EMPTY_CONTENT, sent: { tables: { sbp: [{ name: 'x' }] } }, issues: [{ field: 'sbp', code: 'not_a_table' }] },
    { name: 'a value and a mark on one field', base: EMPTY_CONTENT, sent: { values: { temp: '36.6' }, not_done: { temp: 'ND' } }, issues: [{ field: 'temp', code: 'value_and_mark' }] },
    { name: 'table rows and a mark on one table', base: EMPTY_CONTENT, sent: { tables: { meds: [{ name: 'A' }] }, not_done: { meds: 'NA' } }, issues: [{ field: 'meds', code: 'value_and_mark' }] },
    {
      name: 'every bad value at once, each naming its field',
      base: EMPTY_CONTENT,
      sent: { values: { vsdate: '2026-02-30', sbp: '12O', temp: '36.66', smoker: 'maybe' } },
      issues: [
        { field: 'vsdate', code: 'invalid_format' }, { field: 'sbp', code: 'invalid_format' },
        { field: 'temp', code: 'too_many_decimals' }, { field: 'smoker', code: 'invalid_format' },
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { content, issues } = mergeContent(form, c.base, c.sent);
      expect(issues.map((i) => ({ field: i.field, code: i.code }))).to.deep.equal(c.issues ?? []);
      if (c.content) expect(content).to.deep.equal(c.content);
    });
  }
  it('does not change the saved content it starts from', () => {
    const before = JSON.stringify(saved);
    mergeContent(form, saved, { values: { sbp: '' }, not_done: { temp: 'ND' }, tables: { meds: [] } });
    expect(JSON.stringify(saved)).to.equal(before);
  });
});

describe('records: completenessIssues (a complete record leaves nothing required empty without a mark)', () => {
  const cases: { name: string; content: RecordContent; issues: string[] }[] = [
    { name: 'complete content', content: saved, issues: [] },
    { name: 'a required field empty', content: { values: { vsdate: '2026-03-01' }, notDone: {}, tables: {} }, issues: ['sbp'] },
    { name: 'a required field with a mark', content: { values: { vsdate: '2026-03-01' }, notDone: { sbp: 'ND' }, tables: {} }, issues: [] },
    { name: 'nothing at all', content: EMPTY_CONTENT, issues: ['vsdate', 'sbp'] },
    { name: 'a row without its required column', content: { values: { vsdate: '2026-03-01', sbp: '120' }, notDone: {}, tables: { meds: [{ name: 'A' }, { dose: '5' }] } }, issues: ['meds[1].name'] },
  ];
  for (const c of cases) {
    it(c.name, () => expect(completenessIssues(form, c.content).map((i) => i.field)).to.deep.equal(c.issues));
  }
});

describe('records: typedValues and changedFields', () => {
  it('types values for edit checks and leaves empty fields out', () => {
    expect(typedValues(form, { values: { sbp: '120', temp: '36.6', smoker: 'no' }, notDone: { vsdate: 'ND' }, tables: { meds: [{ name: 'A', dose: '1.5' }] } }))
      .to.deep.equal({ sbp: 120, temp: 36.6, smoker: false, meds: [{ name: 'A', dose: 1.5 }] });
  });

  const cases: { name: string; before: RecordContent; after: RecordContent; changes: [string, string | null, string | null][] }[] = [
    { name: 'nothing changed', before: saved, after: saved, changes: [] },
    { name: 'a new record: every value, mark and table', before: EMPTY_CONTENT, after: saved, changes: [['meds', null, '[{"name":"Aspirin","dose":"100"}]'], ['sbp', null, '120'], ['smoker', null, '[UNK]'], ['temp', null, '36.6'], ['vsdate', null, '2026-03-01']] },
    { name: 'a changed value, an emptied one and a mark replaced by a value', before: saved, after: { ...saved, values: { vsdate: '2026-03-01', sbp: '125', smoker: 'yes' }, notDone: {} }, changes: [['sbp', '120', '125'], ['smoker', '[UNK]', 'yes'], ['temp', '36.6', null]] },
    // The audit text is the same both ways; the kind of entry is what differs.
    { name: 'a text "[ND]" replaced by the mark ND', before: { ...EMPTY_CONTENT, values: { note: '[ND]' } }, after: { ...EMPTY_CONTENT, notDone: { note: 'ND' } }, changes: [['note', '[ND]', '[ND]']] },
    { name: 'the mark ND replaced by a text "[ND]"', before: { ...EMPTY_CONTENT, notDone: { note: 'ND' } }, after: { ...EMPTY_CONTENT, values: { note: '[ND]' } }, changes: [['note', '[ND]', '[ND]']] },
    { name: 'a text "[ND]" and a mark kept as they were', before: { ...EMPTY_CONTENT, values: { note: '[ND]' }, notDone: { temp: 'ND' } }, after: { ...EMPTY_CONTENT, values: { note: '[ND]' }, notDone: { temp: 'ND' } }, changes: [] },
    { name: 'the same rows with their cells in another order, as jsonb gives them back', before: saved, after: { ...saved, tables: { meds: [{ dose: '100', name: 'Aspirin' }] } }, changes: [] },
    { name: 'a row with one more cell', before: saved, after: { ...saved, tables: { meds: [{ name: 'Aspirin', dose: '100', start: '2026-01-05' }] } }, changes: [['meds', '[{"name":"Aspirin","dose":"100"}]', '[{"name":"Aspirin","dose":"100","start":"2026-01-05"}]']] },
  ];
  for (const c of cases) {
    it(`changedFields: ${c.name}`, () => {
      expect(changedFields(c.before, c.after).map((x) => [x.field, x.oldValue, x.newValue])).to.deep.equal(c.changes);
    });
  }

  it('changedFields: says which of a mark and a text written like one an audit value holds, and nothing for other values', () => {
    const kinds = (before: RecordContent, after: RecordContent) => changedFields(before, after).map((x) => [x.field, x.valueKinds]);
    expect(kinds({ ...EMPTY_CONTENT, values: { note: '[ND]' } }, { ...EMPTY_CONTENT, notDone: { note: 'ND' } }))
      .to.deep.equal([['note', { old_value_kind: 'value', new_value_kind: 'not_done' }]]);
    expect(kinds({ ...EMPTY_CONTENT, notDone: { note: 'UNK' } }, { ...EMPTY_CONTENT, values: { note: 'seen' } }))
      .to.deep.equal([['note', { old_value_kind: 'not_done' }]]);
    expect(kinds(EMPTY_CONTENT, saved).map(([field, valueKinds]) => [field, valueKinds]))
      .to.deep.equal([['meds', {}], ['sbp', {}], ['smoker', { new_value_kind: 'not_done' }], ['temp', {}], ['vsdate', {}]]);
  });
});

describe('records: overwrittenFields', () => {
  it('counts a saved text "[ND]" replaced by the mark ND as overwritten, and the empty place filled beside it as not', () => {
    expect(overwrittenFields({ ...EMPTY_CONTENT, values: { note: '[ND]' } }, { ...EMPTY_CONTENT, values: { temp: '36.6' }, notDone: { note: 'ND' } })).to.deep.equal(['note']);
  });
});
