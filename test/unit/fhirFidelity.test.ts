import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import { FIDELITY_HEADER, FIDELITY_TABLE, fidelityLines } from '../helpers/fhirFidelity.js';
import { CASES } from '../helpers/syntheaCases.js';

const DEMO_YAML = readFileSync(new URL('../../studies/demo.yaml', import.meta.url), 'utf8');

/** The expected lines of the fidelity table, without its header. */
function expectedLines(): string[] {
  const [header, ...lines] = readFileSync(FIDELITY_TABLE, 'utf8').split('\n').filter((l) => l !== '');
  expect(header).to.equal(FIDELITY_HEADER);
  return lines;
}

/**
 * What differs between two tables, one sentence per observation and run: the observation's id, where the
 * table expects its value and what the mapping does now.
 */
function differences(expected: string[], actual: string[]): string[] {
  const keyOf = (l: string) => l.split('\t').slice(0, 3).join(' ');
  const missing = expected.filter((l) => !actual.includes(l));
  const extra = actual.filter((l) => !expected.includes(l));
  const keys = [...new Set([...missing, ...extra].map(keyOf))].sort();
  return keys.map((key) => {
    const was = missing.filter((l) => keyOf(l) === key).map((l) => l.split('\t').slice(3).join(' '));
    const now = extra.filter((l) => keyOf(l) === key).map((l) => l.split('\t').slice(3).join(' '));
    return `${key}: expected [${was.join('; ')}], now [${now.join('; ')}]`;
  });
}

describe('FHIR fidelity: every shared Synthea patient through the demo mapping against the expected table', function () {
  // 9 files, about 150 mappings of a whole file per table.
  this.timeout(120_000);
  let expected: string[];
  before(() => {
    expected = expectedLines();
  });

  it('proposes every value of the expected table, at its place, converted as expected, and nothing else', () => {
    expect(differences(expected, fidelityLines())).to.deep.equal([]);
  });

  it('agrees with the values worked out by hand from the files (syntheaCases.ts)', () => {
    for (const c of CASES) {
      for (const [visit, form, field, resource, value] of c.placed) {
        expect(expected, `${c.file} ${resource} ${form}.${field}`).to.include([c.file, c.enrolledOn, resource, visit, form, field, '', value, 'new'].join('\t'));
      }
    }
  });

  it('holds the ties of the files, each with both candidates', () => {
    const ties = expected.filter((l) => l.split('\t')[8]?.startsWith('tie:'));
    expect(ties.length).to.be.greaterThan(0);
    for (const tie of ties) expect(tie.split('\t')[8]?.split('|')).to.have.length.greaterThan(1);
  });

  it('fails, naming the observations, when one mapping line is removed', () => {
    const design = parseStudyDesign(DEMO_YAML);
    const hct = design.fhir_mapping.observations.findIndex((m) => m.field === 'hct');
    design.fhir_mapping.observations.splice(hct, 1);
    const found = differences(expected, fidelityLines(design));
    expect(found.length).to.be.greaterThan(0);
    expect(found.every((d) => /Observation\/[0-9a-f-]+: expected \[baseline lab_hem hct|Observation\/[0-9a-f-]+: expected \[\w+ lab_hem hct/.test(d)), found.join('\n')).to.equal(true);
  });
});
