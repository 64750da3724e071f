import { expect } from 'chai';
import { planQueries, queryCauses, type OpenQuery, type QueryCause } from '../../src/domain/records/autoQueries.js';
import { failingChecks } from '../../src/domain/records/editChecks.js';
import type { RecordContent } from '../../src/domain/records/recordContent.js';
import { demoDesign } from '../helpers/factories.js';

const demo = demoDesign();
const vs = demo.forms.find((f) => f.code === 'vs')!;
const labHem = demo.forms.find((f) => f.code === 'lab_hem')!;
const checksOf = (form: string) => demo.edit_checks.filter((c) => c.form === form);
const content = (values: Record<string, string>): RecordContent => ({ values, notDone: {}, tables: {} });

describe('records: edit checks of the demo design (JSON Logic over typed values)', () => {
  const cases: { name: string; form: string; typed: Record<string, unknown>; failing: string[] }[] = [
    { name: 'blood pressure in order', form: 'vs', typed: { vsdate: '2026-03-01', sbp: 120, dbp: 80 }, failing: [] },
    { name: 'diastolic equal to systolic', form: 'vs', typed: { vsdate: '2026-03-01', sbp: 120, dbp: 120 }, failing: ['dbp_below_sbp'] },
    { name: 'diastolic above systolic', form: 'vs', typed: { vsdate: '2026-03-01', sbp: 90, dbp: 110 }, failing: ['dbp_below_sbp'] },
    { name: 'one pressure missing: left to `required`', form: 'vs', typed: { vsdate: '2026-03-01', dbp: 110 }, failing: [] },
    { name: 'measurements without a date', form: 'vs', typed: { sbp: 120, dbp: 80 }, failing: ['vsdate_with_values'] },
    { name: 'a date without measurements', form: 'vs', typed: { vsdate: '2026-03-01' }, failing: [] },
    { name: 'an empty form', form: 'vs', typed: {}, failing: [] },
    { name: 'haematocrit about three times haemoglobin', form: 'lab_hem', typed: { hgb: 14, hct: 42 }, failing: [] },
    { name: 'haematocrit at the lower bound (2x)', form: 'lab_hem', typed: { hgb: 14, hct: 28 }, failing: [] },
    { name: 'haematocrit too low', form: 'lab_hem', typed: { hgb: 14, hct: 27.9 }, failing: ['hct_plausible_for_hgb'] },
    { name: 'haematocrit too high', form: 'lab_hem', typed: { hgb: 10, hct: 40.1 }, failing: ['hct_plausible_for_hgb'] },
    { name: 'haemoglobin missing', form: 'lab_hem', typed: { hct: 40 }, failing: [] },
  ];
  for (const c of cases) {
    it(c.name, () => expect(failingChecks(checksOf(c.form), c.typed).map((x) => x.code)).to.deep.equal(c.failing));
  }
});

describe('records: queryCauses (range breaches and failing query checks; reject checks are not causes)', () => {
  const cases: { name: string; form: typeof vs; values: Record<string, string>; causes: [string, string, string | null, unknown?][] }[] = [
    { name: 'all in range', form: vs, values: { vsdate: '2026-03-01', sbp: '120', dbp: '80' }, causes: [] },
    { name: 'at the bounds', form: vs, values: { vsdate: '2026-03-01', sbp: '220', dbp: '40' }, causes: [] },
    { name: 'above the maximum', form: vs, values: { vsdate: '2026-03-01', sbp: '232', dbp: '95' }, causes: [['sbp', 'range', null, 'above']] },
    { name: 'below the minimum', form: vs, values: { vsdate: '2026-03-01', sbp: '120', dbp: '35' }, causes: [['dbp', 'range', null, 'below']] },
    { name: 'a decimal below its minimum', form: vs, values: { vsdate: '2026-03-01', temp: '33.9' }, causes: [['temp', 'range', null, 'below']] },
    { name: 'a range breach and a query check', form: vs, values: { vsdate: '2026-03-01', sbp: '60', dbp: '65' }, causes: [['sbp', 'range', null, 'below'], ['dbp', 'edit_check', 'dbp_below_sbp']] },
    { name: 'a failing reject check is no query cause', form: vs, values: { sbp: '120', dbp: '80' }, causes: [] },
    { name: 'haematology check', form: labHem, values: { hgb: '14.0', hct: '70.0' }, causes: [['hct', 'edit_check', 'hct_plausible_for_hgb']] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const causes = queryCauses(c.form, checksOf(c.form.code), content(c.values));
      expect(causes.map((q) => [q.field, q.origin, q.checkCode, ...(q.origin === 'range' ? [q.params.variant] : [])])).to.deep.equal(c.causes);
    });
  }
  it('finds breaches in the numeric columns of table rows, naming each cell', () => {
    const form = { code: 'f', name: 'F', team: 'all' as const, fields: [{
      code: 'doses', label: 'Doses', type: 'table' as const, required: false, columns: [
        { code: 'mg', label: 'mg', type: 'decimal' as const, unit: 'mg', min: 0, max: 500, required: false },
        { code: 'note', label: 'Note', type: 'text' as const, required: false },
      ],
    }] };
    const causes = queryCauses(form, [], { values: {}, notDone: {}, tables: { doses: [{ mg: '100' }, { note: 'x' }, { mg: '750' }, { mg: '-1' }] } });
    expect(causes.map((c) => [c.field, c.params.variant, c.evidence])).to.deep.equal([['doses[2].mg', 'above', '750'], ['doses[3].mg', 'below', '-1']]);
  });

  it('words a range query with the value, the bound and the unit; a check query with its own texts', () => {
    const [range, check] = queryCauses(vs, checksOf('vs'), content({ vsdate: '2026-03-01', sbp: '60', dbp: '65' }));
    expect(range?.message).to.equal('Value 60 mm[Hg] is below the expected minimum 70 mm[Hg]');
    expect(range?.params).to.deep.equal({ variant: 'below', value: 60, limit: 70, unit: ' mm[Hg]' });
    expect(queryCauses(vs, [], content({ sbp: '232' }))[0]?.message).to.equal('Value 232 mm[Hg] is above the expected maximum 220 mm[Hg]');
    expect(check?.message).to.equal('Diastolic pressure must be below systolic pressure');
    expect(check?.params).to.deep.equal({ message: 'Diastolic pressure must be below systolic pressure', message_ru: 'Диастолическое давление должно быть ниже систолического' });
  });
});

describe('records: planQueries (which queries a write opens and closes)', () => {
  const causes = (values: Record<string, string>) => queryCauses(vs, checksOf('vs'), content(values));
  const ok = { vsdate: '2026-03-01', sbp: '120', dbp: '80' };
  const high = { ...ok, sbp: '232' };
  const open = (id: number, fieldCode: string, origin = 'range', checkCode: string | null = null): OpenQuery => ({ id, fieldCode, origin, checkCode });
  const fields = (qs: QueryCause[]) => qs.map((q) => `${q.field}:${q.origin}`);
  const cases: { name: string; before: QueryCause[]; after: QueryCause[]; open: OpenQuery[]; toOpen: string[]; toClose: number[] }[] = [
    { name: 'a new record with a breach opens its query', before: [], after: causes(high), open: [], toOpen: ['sbp:range'], toClose: [] },
    { name: 'a breach with an open query opens no second one', before: causes(high), after: causes({ ...high, hr: '70' }), open: [open(1, 'sbp')], toOpen: [], toClose: [] },
    { name: 'a corrected value closes its query', before: causes(high), after: causes(ok), open: [open(1, 'sbp')], toOpen: [], toClose: [1] },
    { name: 'an unrelated change does not reopen a query the site closed', before: causes(high), after: causes({ ...high, hr: '70' }), open: [], toOpen: [], toClose: [] },
    { name: 'a new out-of-range value is queried again after the site closed the first query', before: causes(high), after: causes({ ...high, sbp: '240' }), open: [], toOpen: ['sbp:range'], toClose: [] },
    { name: 'a new out-of-range value keeps the query still open, without a second one', before: causes(high), after: causes({ ...high, sbp: '240' }), open: [open(1, 'sbp')], toOpen: [], toClose: [] },
    { name: 'a corrected check closes its query and leaves manual queries alone', before: causes({ ...ok, dbp: '130' }), after: causes(ok), open: [open(2, 'dbp', 'edit_check', 'dbp_below_sbp'), open(3, 'dbp', 'manual')], toOpen: [], toClose: [2] },
    { name: 'a check failing on changed values opens again', before: causes({ ...ok, dbp: '130' }), after: causes({ ...ok, dbp: '125' }), open: [], toOpen: ['dbp:edit_check'], toClose: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planQueries(c.before, c.after, c.open);
      expect(fields(plan.toOpen)).to.deep.equal(c.toOpen);
      expect(plan.toClose.map((q) => q.id)).to.deep.equal(c.toClose);
    });
  }
});
