/**
 * The FHIR fidelity table (issue 24, point 6): what the demo mapping proposes from every shared Synthea
 * file, one line per item with a place, so that a change to the mapping that moves, drops or converts a
 * value differently shows up as a line that differs, naming the observation. Two kinds of run per file:
 * - enrolled on each day that holds a mapped Observation, so that every measurement of the file is the
 *   baseline visit's (window days 0…3) at least once: the baseline items;
 * - enrolled on the dates of `syntheaCases.ts`: every item with a place, table rows (medical history,
 *   medications) included.
 * `test/fixtures/fhir/fidelity/demo-synthea.tsv` holds the expected lines (its README says how it was built
 * and checked); `test/unit/fhirFidelity.test.ts` compares.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { FhirEntry } from '../../src/domain/fhir/fhirEntry.js';
import { localDate } from '../../src/domain/fhir/fhirDates.js';
import type { FhirImportItem } from '../../src/domain/fhir/fhirImportItem.js';
import { mapToEcrf } from '../../src/domain/fhir/mapToEcrf.js';
import { observedValues } from '../../src/domain/fhir/observationValues.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';
import { fhirJsonEntries } from './fhirFiles.js';
import { CASES } from './syntheaCases.js';

export const FIDELITY_TABLE = new URL('../fixtures/fhir/fidelity/demo-synthea.tsv', import.meta.url);
export const FIDELITY_HEADER = ['file', 'enrolled_on', 'resource', 'visit', 'form', 'field', 'row', 'value', 'outcome'].join('\t');
const SYNTHEA = new URL('../fixtures/fhir/synthea/', import.meta.url);

/** One line of the table, tab-separated (no value of the fixtures holds a tab or a line break). */
function line(file: string, enrolledOn: string, item: FhirImportItem): string {
  const outcome = item.tie ? `tie:${item.candidates.map((c) => c.value).join('|')}` : item.state === 'skipped' ? `skipped:${item.reason}` : item.state;
  return [file, enrolledOn, item.resource, item.visit, item.form, item.field, item.row ?? '', item.value ?? '', outcome].join('\t');
}

/** The days (sender's calendar) of the file's Observations that some observation mapping names. */
function observationDays(entries: FhirEntry[], design: StudyDesign): string[] {
  const codes = new Set(design.fhir_mapping.observations.flatMap((m) => m.codes.map((c) => `${c.system}|${c.code}`)));
  const days = new Set<string>();
  for (const { resource } of entries) {
    if (resource.resourceType !== 'Observation') continue;
    const observation = resource as fhir4.Observation;
    const mapped = observedValues(observation).some((v) => v.codings.some((c) => codes.has(`${c.system}|${c.code}`)));
    const day = localDate(observation.effectiveDateTime ?? observation.effectivePeriod?.start ?? observation.issued);
    if (mapped && day) days.add(day);
  }
  return [...days].sort();
}

/** The table's lines as the mapping gives them now, sorted. */
export function fidelityLines(design: StudyDesign = parseStudyDesign(readFileSync(new URL('../../studies/demo.yaml', import.meta.url), 'utf8'))): string[] {
  const lines: string[] = [];
  for (const file of readdirSync(SYNTHEA).filter((f) => f.endsWith('.json')).sort()) {
    const entries = fhirJsonEntries(readFileSync(new URL(file, SYNTHEA)));
    for (const day of observationDays(entries, design)) {
      const { items } = mapToEcrf(entries, design, { enrolledOn: day, saved: () => null });
      for (const item of items) if (item.visit === 'baseline' && item.row === null) lines.push(line(file, day, item));
    }
    for (const c of CASES.filter((k) => k.file === file)) {
      const { items } = mapToEcrf(entries, design, { enrolledOn: c.enrolledOn, saved: () => null });
      for (const item of items) if (item.form !== null) lines.push(line(file, c.enrolledOn, item));
    }
  }
  return [...new Set(lines)].sort();
}
