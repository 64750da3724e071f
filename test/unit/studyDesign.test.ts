import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { dump, load } from 'js-yaml';
import jsonLogic from 'json-logic-js';
import { DomainError } from '../../src/domain/errors.js';
import { designSchema, designSchemaPath } from '../../src/domain/studyDesign/designSchema.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';

const demoText = readFileSync(new URL('../../studies/demo.yaml', import.meta.url), 'utf8');

/** A small valid design that every error case below breaks in one place. */
const BASE_YAML = `
code: T1
name: Test study
sites: [{number: "01", name: Site one}]
visits:
  - {code: v1, name: Visit 1, planned_day: 0, forms: [f1]}
forms:
  - code: f1
    name: Form one
    fields:
      - {code: a, label: A, type: integer, unit: kg, min: 0, max: 10}
      - {code: b, label: B, type: integer}
      - {code: c, label: C, type: choice, options: [{code: "1", label: One}]}
      - code: t
        label: T
        type: table
        columns:
          - {code: x, label: X, type: text}
          - {code: d, label: D, type: date}
          - {code: y, label: Y, type: yesno}
edit_checks:
  - {code: e1, form: f1, field: a, rule: {"<": [{"var": "a"}, {"var": "b"}]}, message: A below B}
fhir_mapping:
  observations:
    - {codes: [{system: "http://loinc.org", code: "1-1"}], form: f1, field: a}
  conditions:
    - {systems: ["http://snomed.info/sct"], form: f1, field: t, columns: {x: display, d: onset, y: ongoing}}
  medications:
    - {systems: ["http://www.nlm.nih.gov/research/umls/rxnorm"], form: f1, field: t, columns: {x: display, d: start}}
`;

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call,
   @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   The tests edit the parsed base loosely, as an author edits the file, into shapes no type of a design allows (unknown
   members, values of the wrong type, required members deleted): the document is untyped on purpose, and the parser's
   verdict on it is what each case checks. */
type Doc = any;

/** The base design with one change applied, as YAML text. */
function baseWith(change: (doc: Doc) => void): string {
  const doc = load(BASE_YAML) as Doc;
  change(doc);
  return dump(doc);
}

/** Runs the parser and returns its `design_invalid` error (failing the test if there is none). */
function parseError(text: string): DomainError {
  try {
    parseStudyDesign(text);
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).code).to.equal('design_invalid');
    return error as DomainError;
  }
  expect.fail('parseStudyDesign accepted an invalid design');
}

const reported = (error: DomainError) => error.fieldErrors.map(({ pointer, code }) => ({ pointer, code }));

describe('parseStudyDesign', () => {
  describe('the demo study', () => {
    const demo = parseStudyDesign(demoText);
    const form = (code: string) => demo.forms.find((f) => f.code === code)!;
    const visit = (code: string) => demo.visits.find((v) => v.code === code)!;

    it('parses with its own settings', () => {
      expect(demo).to.include({
        code: 'DEMO', name: 'Demo: Hypertension add-on therapy, phase II', blinded: true,
        consent_required: true, enrolment_open: true, subject_format: '{site}-{seq:3}',
      });
      expect(demo.sites).to.deep.equal([{ number: '01', name: 'City Hospital' }, { number: '02', name: 'Regional Clinic' }]);
      expect(demo.visits.map((v) => [v.code, v.planned_day, v.window.before, v.window.after, v.repeating])).to.deep.equal([
        ['screening', -14, 14, 0, false],
        ['baseline', 0, 0, 3, false],
        ['week4', 28, 7, 7, false],
        ['week12', 84, 7, 7, false],
        ['unscheduled', null, 0, 0, true],
      ]);
      expect(visit('week12').forms).to.deep.equal(['vs', 'lab_hem', 'lab_chem', 'ae', 'cm']);
    });

    it('fills the defaults the file leaves out', () => {
      expect(form('vs').team).to.equal('all');
      expect(form('ip_alloc').team).to.equal('unblinded');
      expect(form('dm').fields.find((f) => f.code === 'ethnicity')!.required).to.equal(false);
      expect(demo.fhir_mapping.observations.find((o) => o.field === 'sbp')!.pick).to.equal('nearest');
      expect(demo.edit_checks.map((c) => c.action)).to.deep.equal(['query', 'query', 'reject']);
    });

    // The codes that occur in test/fixtures/fhir (see its README) must reach a field.
    const fixtureCodes: [loinc: string, target: string, unit: string][] = [
      ['8480-6', 'vs.sbp', 'mm[Hg]'], ['8462-4', 'vs.dbp', 'mm[Hg]'], ['8867-4', 'vs.hr', '/min'],
      ['9279-1', 'vs.rr', '/min'], ['8310-5', 'vs.temp', 'Cel'], ['8331-1', 'vs.temp', 'Cel'],
      ['29463-7', 'vs.weight', 'kg'], ['29463-7', 'dm.weight', 'kg'], ['8302-2', 'dm.height', 'cm'],
      ['718-7', 'lab_hem.hgb', 'g/dL'], ['6690-2', 'lab_hem.wbc', '10*3/uL'], ['777-3', 'lab_hem.plt', '10*3/uL'],
      ['4544-3', 'lab_hem.hct', '%'], ['2339-0', 'lab_chem.glucose', 'mmol/L'], ['38483-4', 'lab_chem.creat', 'umol/L'],
      ['2093-3', 'lab_chem.chol', 'mmol/L'], ['1742-6', 'lab_chem.alt', 'U/L'], ['33914-3', 'lab_chem.egfr', 'mL/min/{1.73_m2}'],
    ];
    for (const [loinc, target, unit] of fixtureCodes) {
      it(`maps LOINC ${loinc} to ${target} in ${unit}`, () => {
        const [formCode = '', fieldCode] = target.split('.');
        const mapping = demo.fhir_mapping.observations.find((o) =>
          o.form === formCode && o.field === fieldCode && o.codes.some((c) => c.system === 'http://loinc.org' && c.code === loinc));
        expect(mapping, `no mapping of ${loinc} to ${target}`).to.not.equal(undefined);
        const field = form(formCode).fields.find((f) => f.code === fieldCode)!;
        expect(field).to.have.property('unit', unit);
      });
    }

    it('maps conditions and medications to table columns', () => {
      expect(demo.fhir_mapping.conditions[0]).to.deep.include({
        form: 'mh', field: 'conditions', columns: { term: 'display', code: 'code', onset: 'onset', ongoing: 'ongoing' },
        onset_after_enrolment: { form: 'ae', field: 'events', columns: { term: 'display', onset: 'onset' } },
      });
      expect(demo.fhir_mapping.medications[0]).to.deep.include({
        form: 'cm', field: 'medications', columns: { name: 'display', code: 'code', start: 'start', stop: 'end', ongoing: 'ongoing' },
      });
    });

    // The rules must say what their messages say, including passing while a value is still empty.
    const ruleCases: [check: string, values: Record<string, unknown>, holds: boolean][] = [
      ['dbp_below_sbp', { sbp: 120, dbp: 80 }, true],
      ['dbp_below_sbp', { sbp: 80, dbp: 120 }, false],
      ['dbp_below_sbp', { sbp: 120, dbp: 120 }, false],
      ['dbp_below_sbp', { sbp: 120 }, true],
      ['hct_plausible_for_hgb', { hgb: 14, hct: 42 }, true],
      ['hct_plausible_for_hgb', { hgb: 14, hct: 14 }, false],
      ['hct_plausible_for_hgb', { hgb: 8, hct: 40 }, false],
      ['hct_plausible_for_hgb', { hgb: 14 }, true],
      ['vsdate_with_values', { vsdate: '2025-01-10', sbp: 120 }, true],
      ['vsdate_with_values', { sbp: 120 }, false],
      ['vsdate_with_values', {}, true],
    ];
    for (const [code, values, holds] of ruleCases) {
      it(`${code} ${holds ? 'holds' : 'fails'} for ${JSON.stringify(values)}`, () => {
        const check = demo.edit_checks.find((c) => c.code === code)!;
        expect(jsonLogic.truthy(jsonLogic.apply(check.rule, values))).to.equal(holds);
      });
    }
  });

  describe('defaults', () => {
    it('fills every default of a minimal design', () => {
      const design: StudyDesign = parseStudyDesign(baseWith((d) => {
        delete d.edit_checks;
        delete d.fhir_mapping;
      }));
      expect(design).to.include({ blinded: false, consent_required: false, enrolment_open: true, visit_window_queries: true, subject_format: '{site}-{seq:3}', reason_required_on_update: false });
      expect(design.visits[0]).to.deep.include({ window: { before: 0, after: 0 }, repeating: false });
      expect(design.forms[0]?.team).to.equal('all');
      expect(design.forms[0]?.fields.every((f) => f.required === false)).to.equal(true);
      expect(design.edit_checks).to.deep.equal([]);
      expect(design.fhir_mapping).to.deep.equal({ observations: [], conditions: [], medications: [] });
    });

    it('accepts the base design used by the error cases', () => {
      expect(parseStudyDesign(BASE_YAML).edit_checks[0]?.action).to.equal('query');
    });
  });

  describe('semantic errors', () => {
    const cases: { name: string; change: (d: Doc) => void; expected: { pointer: string; code: string }[] }[] = [
      { name: 'duplicate site number', change: (d) => d.sites.push({ number: '01', name: 'Again' }),
        expected: [{ pointer: '/sites/1/number', code: 'duplicate_code' }] },
      { name: 'duplicate visit code', change: (d) => d.visits.push({ ...d.visits[0] }),
        expected: [{ pointer: '/visits/1/code', code: 'duplicate_code' }] },
      { name: 'duplicate form code', change: (d) => d.forms.push({ ...d.forms[0] }),
        expected: [{ pointer: '/forms/1/code', code: 'duplicate_code' }] },
      { name: 'duplicate field code', change: (d) => { d.forms[0].fields[2].code = 'a'; },
        expected: [{ pointer: '/forms/0/fields/2/code', code: 'duplicate_code' }] },
      { name: 'duplicate column code', change: (d) => d.forms[0].fields[3].columns.push({ code: 'x', label: 'X again', type: 'text' }),
        expected: [{ pointer: '/forms/0/fields/3/columns/3/code', code: 'duplicate_code' }] },
      { name: 'duplicate option code', change: (d) => d.forms[0].fields[2].options.push({ code: '1', label: 'Uno' }),
        expected: [{ pointer: '/forms/0/fields/2/options/1/code', code: 'duplicate_code' }] },
      { name: 'duplicate edit check code', change: (d) => d.edit_checks.push({ ...d.edit_checks[0] }),
        expected: [{ pointer: '/edit_checks/1/code', code: 'duplicate_code' }] },
      { name: 'form listed twice in a visit', change: (d) => d.visits[0].forms.push('f1'),
        expected: [{ pointer: '/visits/0/forms/1', code: 'duplicate_code' }] },
      { name: 'visit lists an unknown form', change: (d) => d.visits[0].forms.push('nope'),
        expected: [{ pointer: '/visits/0/forms/1', code: 'unknown_form' }] },
      { name: 'form used by no visit', change: (d) => d.forms.push({ code: 'f2', name: 'Two', fields: [{ code: 'z', label: 'Z', type: 'text' }] }),
        expected: [{ pointer: '/forms/1', code: 'form_unused' }] },
      { name: 'window without a planned day', change: (d) => { delete d.visits[0].planned_day; d.visits[0].window = { after: 2 }; },
        expected: [{ pointer: '/visits/0/window', code: 'window_without_day' }] },
      { name: 'subject format without {seq:N}', change: (d) => { d.subject_format = '{site}-{seq}'; },
        expected: [{ pointer: '/subject_format', code: 'subject_format_invalid' }] },
      { name: 'subject format with {site} twice', change: (d) => { d.subject_format = '{site}{site}-{seq:3}'; },
        expected: [{ pointer: '/subject_format', code: 'subject_format_invalid' }] },
      { name: 'subject format with a stray brace', change: (d) => { d.subject_format = '{site}-{seq:3}}'; },
        expected: [{ pointer: '/subject_format', code: 'subject_format_invalid' }] },
      { name: 'min above max', change: (d) => { d.forms[0].fields[0].min = 11; },
        expected: [{ pointer: '/forms/0/fields/0/max', code: 'min_above_max' }] },
      { name: 'min above max in a column', change: (d) => d.forms[0].fields[3].columns.push({ code: 'n', label: 'N', type: 'decimal', min: 5, max: 1 }),
        expected: [{ pointer: '/forms/0/fields/3/columns/3/max', code: 'min_above_max' }] },
      { name: 'fractional bound of an integer field', change: (d) => { d.forms[0].fields[0].min = 0.5; },
        expected: [{ pointer: '/forms/0/fields/0/min', code: 'integer_expected' }] },
      { name: 'choice without options', change: (d) => { delete d.forms[0].fields[2].options; },
        expected: [{ pointer: '/forms/0/fields/2', code: 'options_missing' }] },
      { name: 'multichoice with an empty option list', change: (d) => { d.forms[0].fields[2].type = 'multichoice'; d.forms[0].fields[2].options = []; },
        expected: [{ pointer: '/forms/0/fields/2/options', code: 'options_missing' }] },
      { name: 'options on an integer field', change: (d) => { d.forms[0].fields[1].options = [{ code: '1', label: 'One' }]; },
        expected: [{ pointer: '/forms/0/fields/1/options', code: 'property_not_allowed' }] },
      { name: 'unit on a text column', change: (d) => { d.forms[0].fields[3].columns[0].unit = 'kg'; },
        expected: [{ pointer: '/forms/0/fields/3/columns/0/unit', code: 'property_not_allowed' }] },
      { name: 'decimals on an integer field', change: (d) => { d.forms[0].fields[1].decimals = 1; },
        expected: [{ pointer: '/forms/0/fields/1/decimals', code: 'property_not_allowed' }] },
      { name: 'table without columns', change: (d) => { delete d.forms[0].fields[3].columns; },
        expected: [{ pointer: '/forms/0/fields/3', code: 'columns_missing' }] },
      { name: 'columns on a text field', change: (d) => d.forms[0].fields.push({ code: 'w', label: 'W', type: 'text', columns: [{ code: 'q', label: 'Q', type: 'text' }] }),
        expected: [{ pointer: '/forms/0/fields/4/columns', code: 'property_not_allowed' }] },
      { name: 'table column that is a table', change: (d) => d.forms[0].fields[3].columns.push({ code: 'n', label: 'N', type: 'table' }),
        expected: [{ pointer: '/forms/0/fields/3/columns/3/type', code: 'nested_table' }] },
      { name: 'edit check on an unknown form', change: (d) => { d.edit_checks[0].form = 'nope'; },
        expected: [{ pointer: '/edit_checks/0/form', code: 'unknown_form' }] },
      { name: 'edit check on an unknown field', change: (d) => { d.edit_checks[0].field = 'nope'; },
        expected: [{ pointer: '/edit_checks/0/field', code: 'unknown_field' }] },
      { name: 'rule reads an unknown variable', change: (d) => { d.edit_checks[0].rule = { '<': [{ var: 'a' }, { var: 'zz' }] }; },
        expected: [{ pointer: '/edit_checks/0/rule/</1/var', code: 'unknown_variable' }] },
      { name: 'rule reads an unknown variable with a default', change: (d) => { d.edit_checks[0].rule = { '<': [{ var: ['zz', 0] }, 5] }; },
        expected: [{ pointer: '/edit_checks/0/rule/</0/var/0', code: 'unknown_variable' }] },
      { name: 'rule asks whether an unknown field is missing', change: (d) => { d.edit_checks[0].rule = { or: [{ missing: ['a', 'zz'] }, true] }; },
        expected: [{ pointer: '/edit_checks/0/rule/or/0/missing/1', code: 'unknown_variable' }] },
      { name: 'rule reads a field of another form inside a nested operation', change: (d) => { d.edit_checks[0].rule = { if: [{ '!': { var: 'sbp' } }, true, false] }; },
        expected: [{ pointer: '/edit_checks/0/rule/if/0/!/var', code: 'unknown_variable' }] },
      { name: 'rule reads an unknown column while iterating a table',
        change: (d) => { d.edit_checks[0].rule = { all: [{ var: 't' }, { '!=': [{ var: 'zz' }, { var: 'x' }] }] }; },
        expected: [{ pointer: '/edit_checks/0/rule/all/1/!=/0/var', code: 'unknown_variable' }] },
      { name: 'rule uses an unknown operation', change: (d) => { d.edit_checks[0].rule = { and: [{ frobnicate: [{ var: 'a' }] }] }; },
        expected: [{ pointer: '/edit_checks/0/rule/and/0/frobnicate', code: 'unknown_operation' }] },
      { name: 'observation mapped to an unknown form', change: (d) => { d.fhir_mapping.observations[0].form = 'nope'; },
        expected: [{ pointer: '/fhir_mapping/observations/0/form', code: 'unknown_form' }] },
      { name: 'observation mapped to an unknown field', change: (d) => { d.fhir_mapping.observations[0].field = 'nope'; },
        expected: [{ pointer: '/fhir_mapping/observations/0/field', code: 'unknown_field' }] },
      { name: 'observation mapped to a numeric field without a unit', change: (d) => { d.fhir_mapping.observations[0].field = 'b'; },
        expected: [{ pointer: '/fhir_mapping/observations/0/field', code: 'unit_missing' }] },
      { name: 'observation mapped to a table', change: (d) => { d.fhir_mapping.observations[0].field = 't'; },
        expected: [{ pointer: '/fhir_mapping/observations/0/field', code: 'field_type_mismatch' }] },
      { name: 'molar mass on a choice target', change: (d) => Object.assign(d.fhir_mapping.observations[0], { field: 'c', molar_mass: 180.156 }),
        expected: [{ pointer: '/fhir_mapping/observations/0/molar_mass', code: 'property_not_allowed' }] },
      { name: 'conditions mapped to a field that is not a table', change: (d) => { d.fhir_mapping.conditions[0].field = 'a'; },
        expected: [{ pointer: '/fhir_mapping/conditions/0/field', code: 'field_type_mismatch' }] },
      { name: 'conditions mapped to an unknown column', change: (d) => { d.fhir_mapping.conditions[0].columns.zz = 'code'; },
        expected: [{ pointer: '/fhir_mapping/conditions/0/columns/zz', code: 'unknown_column' }] },
      { name: 'ongoing mapped to a text column', change: (d) => { d.fhir_mapping.conditions[0].columns.x = 'ongoing'; },
        expected: [{ pointer: '/fhir_mapping/conditions/0/columns/x', code: 'column_type_mismatch' }] },
      { name: 'adverse-event candidates mapped to a field that is not a table',
        change: (d) => { d.fhir_mapping.conditions[0].onset_after_enrolment = { form: d.fhir_mapping.conditions[0].form, field: 'a', columns: { x: 'display' } }; },
        expected: [{ pointer: '/fhir_mapping/conditions/0/onset_after_enrolment/field', code: 'field_type_mismatch' }] },
      { name: 'medications mapped to an unknown form', change: (d) => { d.fhir_mapping.medications[0].form = 'nope'; },
        expected: [{ pointer: '/fhir_mapping/medications/0/form', code: 'unknown_form' }] },
      { name: 'medications mapped to an unknown field', change: (d) => { d.fhir_mapping.medications[0].field = 'nope'; },
        expected: [{ pointer: '/fhir_mapping/medications/0/field', code: 'unknown_field' }] },
      { name: 'several problems at once',
        change: (d) => { d.visits[0].forms.push('nope'); d.forms[0].fields[0].max = -1; d.edit_checks[0].field = 'nope'; },
        expected: [
          { pointer: '/visits/0/forms/1', code: 'unknown_form' },
          { pointer: '/forms/0/fields/0/max', code: 'min_above_max' },
          { pointer: '/edit_checks/0/field', code: 'unknown_field' },
        ] },
    ];
    for (const { name, change, expected } of cases) {
      it(`reports ${name}`, () => {
        const error = parseError(baseWith(change));
        expect(reported(error)).to.deep.equal(expected);
        expect(error.params).to.deep.equal({ count: expected.length });
        for (const fieldError of error.fieldErrors) expect(fieldError.params?.message).to.be.a('string').and.match(/\.$/);
      });
    }

    it('lets a rule read table columns inside an iteration and anything inside reduce', () => {
      const text = baseWith((d) => {
        d.edit_checks[0].rule = { and: [
          { some: [{ var: 't' }, { '==': [{ var: 'y' }, true] }] },
          { reduce: [{ var: 't' }, { '+': [{ var: 'accumulator' }, 1] }, 0] },
          { '>': [{ var: 't.0.x' }, ''] },
        ] };
      });
      expect(() => parseStudyDesign(text)).to.not.throw();
    });
  });

  describe('schema errors', () => {
    const cases: { name: string; text: string; expected: { pointer: string; code: string }[]; message?: RegExp }[] = [
      { name: 'an unknown top-level property', text: baseWith((d) => { d.sitez = []; }),
        expected: [{ pointer: '/sitez', code: 'schema' }], message: /allowed are code, name, blinded/ },
      { name: 'a missing required property', text: baseWith((d) => { delete d.name; }),
        expected: [{ pointer: '/name', code: 'schema' }], message: /required property "name"/ },
      { name: 'an unquoted site number', text: BASE_YAML.replace('number: "01"', 'number: 01'),
        expected: [{ pointer: '/sites/0/number', code: 'schema' }], message: /must be string/ },
      { name: 'an unknown field type', text: baseWith((d) => { d.forms[0].fields[1].type = 'number'; }),
        expected: [{ pointer: '/forms/0/fields/1/type', code: 'schema' }], message: /"integer", "decimal"/ },
      { name: 'a code with capitals', text: baseWith((d) => { d.visits[0].code = 'Visit1'; }),
        expected: [{ pointer: '/visits/0/code', code: 'schema' }] },
      { name: 'an unknown edit check action', text: baseWith((d) => { d.edit_checks[0].action = 'warn'; }),
        expected: [{ pointer: '/edit_checks/0/action', code: 'schema' }] },
      { name: 'a planned day that is not an integer', text: baseWith((d) => { d.visits[0].planned_day = 'day 1'; }),
        expected: [{ pointer: '/visits/0/planned_day', code: 'schema' }], message: /integer or null/ },
      { name: 'a mapped column key that is not a code', text: baseWith((d) => { d.fhir_mapping.conditions[0].columns['Bad-Key'] = 'code'; }),
        expected: [{ pointer: '/fhir_mapping/conditions/0/columns/Bad-Key', code: 'schema' }] },
      { name: 'an unknown condition source', text: baseWith((d) => { d.fhir_mapping.conditions[0].columns.x = 'name'; }),
        expected: [{ pointer: '/fhir_mapping/conditions/0/columns/x', code: 'schema' }] },
      { name: 'a code system that is not a URI', text: baseWith((d) => { d.fhir_mapping.observations[0].codes[0].system = 'loinc'; }),
        expected: [{ pointer: '/fhir_mapping/observations/0/codes/0/system', code: 'schema' }] },
      { name: 'a document that is not a mapping', text: 'just some text\n',
        expected: [{ pointer: '', code: 'schema' }], message: /The document must be object/ },
      // Semantic checks assume the schema's shape, so they wait until the schema errors are fixed.
      { name: 'a schema error next to a duplicate', text: baseWith((d) => { d.name = 5; d.sites.push({ number: '01', name: 'Again' }); }),
        expected: [{ pointer: '/name', code: 'schema' }] },
    ];
    for (const { name, text, expected, message } of cases) {
      it(`reports ${name}`, () => {
        const error = parseError(text);
        expect(reported(error)).to.deep.equal(expected);
        if (message) expect(error.fieldErrors[0]?.params?.message).to.match(message);
      });
    }
  });

  describe('YAML syntax errors', () => {
    const cases: { name: string; text: string; line?: number }[] = [
      { name: 'bad indentation', text: 'code: T1\nname: Test\n  sites: []\n', line: 3 },
      { name: 'an unclosed flow sequence', text: 'code: T1\nsites: [{number: "01"\nname: x\n', line: 3 },
      { name: 'a duplicate key', text: 'code: T1\ncode: T2\n', line: 2 },
      { name: 'an empty file', text: '' },
    ];
    for (const { name, text, line } of cases) {
      it(`reports ${name}${line ? ` with its line` : ''}`, () => {
        const error = parseError(text);
        expect(reported(error)).to.deep.equal([{ pointer: '', code: 'yaml_syntax' }]);
        if (line !== undefined) {
          expect(error.fieldErrors[0]?.params).to.include({ line });
          expect(error.fieldErrors[0]?.params?.message).to.include(`line ${line}`);
        }
      });
    }
  });
});

describe('studies/design.schema.json', () => {
  it('is found from the module directory', () => {
    expect(designSchemaPath()).to.equal(new URL('../../studies/design.schema.json', import.meta.url).pathname);
  });

  // The schema is the format's documentation: every member described, no member unchecked.
  it('describes every property and closes every object', () => {
    const gaps: string[] = [];
    const visit = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((item, i) => visit(item, `${at}/${i}`));
      if (node === null || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      if (schema.properties) {
        if (schema.additionalProperties !== false) gaps.push(`${at}: additionalProperties is not false`);
        for (const [name, property] of Object.entries(schema.properties as Record<string, Record<string, unknown>>)) {
          if (typeof property.description !== 'string') gaps.push(`${at}/properties/${name}: no description`);
        }
      }
      for (const [key, value] of Object.entries(schema)) visit(value, `${at}/${key}`);
    };
    visit(designSchema(), '');
    expect(gaps).to.deep.equal([]);
  });
});
