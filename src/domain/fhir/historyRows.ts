/// <reference types="fhir" />
/**
 * Conditions and medications as rows of a table field (medical history, concomitant medications): the
 * sources a `TableMapping`'s columns can name, read from one resource.
 */
import type { ConditionSource, MedicationSource } from '../studyDesign/types.js';
import type { ItemCoding } from './fhirImportItem.js';
import { resolveReference, type ResourceIndex } from './fhirReferences.js';

export type HistorySource = ConditionSource | MedicationSource;

/** A source value: text or a FHIR date (`isDate`), the `ongoing` flag, or the mark `UNK` of an unknown date (`mark`). */
interface SourceValue {
  value: string | boolean;
  isDate: boolean;
  mark?: true;
}

/** One resource read as a table row, before it is placed in a visit. */
export interface HistoryRow {
  /** The coding shown in the import items: the preferred one, else the first, else the text alone. */
  coding: ItemCoding;
  /** The FHIR date or dateTime the row is placed by (onset, start), or null. */
  date: string | null;
  sources: Partial<Record<HistorySource, SourceValue>>;
}

/** Resource types that fill table fields. */
export const HISTORY_TYPES = new Set(['Condition', 'MedicationRequest', 'MedicationStatement']);

/**
 * Statuses that mean the resource states nothing about the patient: recorded in error, refuted, or a
 * medication that was never taken (a cancelled or draft request, a statement of not taking it).
 */
const IGNORED_CONDITION_VERIFICATION = new Set(['entered-in-error', 'refuted']);
const IGNORED_REQUEST_STATUS = new Set(['entered-in-error', 'cancelled', 'draft']);
const IGNORED_STATEMENT_STATUS = new Set(['entered-in-error', 'not-taken']);
/** Medication statuses that say it is no longer taken, whether or not the resource says since when. */
const ENDED_MEDICATION_STATUS = new Set(['stopped', 'completed']);
/** Clinical statuses under which a condition without an abatement is no longer ongoing. */
const ENDED_CLINICAL_STATUS = new Set(['inactive', 'remission', 'resolved']);

/**
 * Reads a Condition, MedicationRequest or MedicationStatement as a row.
 *
 * @param systems - code systems in order of preference: the first coding in one of them supplies
 *   `code` and `display`. Without such a coding, `display` is the concept's text (or any coding's
 *   display) and `code` stays empty, so a history entry is not lost for being coded elsewhere.
 * @returns null for a resource to be ignored (entered in error, refuted, never taken)
 */
export function historyRow(resource: fhir4.Resource, systems: readonly string[], index: ResourceIndex): HistoryRow | null {
  switch (resource.resourceType) {
    case 'Condition':
      return conditionRow(resource as fhir4.Condition, systems);
    case 'MedicationRequest':
      return requestRow(resource as fhir4.MedicationRequest, systems, index);
    case 'MedicationStatement':
      return statementRow(resource as fhir4.MedicationStatement, systems, index);
    default:
      return null;
  }
}

function conditionRow(condition: fhir4.Condition, systems: readonly string[]): HistoryRow | null {
  if (hasCode(condition.verificationStatus, IGNORED_CONDITION_VERIFICATION)) return null;
  const sources = codedSources(condition.code, systems);
  const onset = condition.onsetDateTime ?? condition.onsetPeriod?.start;
  if (onset) sources.onset = { value: onset, isDate: true };
  else if (condition.onsetString) sources.onset = { value: condition.onsetString, isDate: false };
  const abatement = condition.abatementDateTime ?? condition.abatementPeriod?.end ?? condition.abatementPeriod?.start;
  if (abatement) sources.abatement = { value: abatement, isDate: true };
  else if (condition.abatementString) sources.abatement = { value: condition.abatementString, isDate: false };
  // The design schema defines ongoing as "no abatement"; a resolved or inactive status without an
  // abatement date says the same thing, so it counts too.
  const ended = Boolean(abatement ?? condition.abatementString ?? condition.abatementAge ?? condition.abatementRange);
  sources.ongoing = { value: !ended && !hasCode(condition.clinicalStatus, ENDED_CLINICAL_STATUS), isDate: false };
  return { coding: itemCoding(condition.code, systems), date: onset ?? condition.recordedDate ?? null, sources };
}

function requestRow(request: fhir4.MedicationRequest, systems: readonly string[], index: ResourceIndex): HistoryRow | null {
  if (IGNORED_REQUEST_STATUS.has(request.status)) return null;
  const concept = medicationConcept(request, index);
  const sources = codedSources(concept, systems);
  // The period the medication is taken for: the dosage's bounds, else the prescription's validity,
  // else the day it was prescribed.
  const bounds = request.dosageInstruction?.[0]?.timing?.repeat?.boundsPeriod;
  const validity = request.dispenseRequest?.validityPeriod;
  const start = bounds?.start ?? validity?.start ?? request.authoredOn;
  if (start) sources.start = { value: start, isDate: true };
  medicationPeriodEnd(sources, request.status, bounds?.end ?? validity?.end);
  const dosage = dosageText(request.dosageInstruction);
  if (dosage) sources.dosage = { value: dosage, isDate: false };
  sources.status = { value: request.status, isDate: false };
  return { coding: itemCoding(concept, systems), date: start ?? null, sources };
}

function statementRow(statement: fhir4.MedicationStatement, systems: readonly string[], index: ResourceIndex): HistoryRow | null {
  if (IGNORED_STATEMENT_STATUS.has(statement.status)) return null;
  const concept = medicationConcept(statement, index);
  const sources = codedSources(concept, systems);
  const start = statement.effectivePeriod?.start ?? statement.effectiveDateTime;
  if (start) sources.start = { value: start, isDate: true };
  medicationPeriodEnd(sources, statement.status, statement.effectivePeriod?.end);
  const dosage = dosageText(statement.dosage);
  if (dosage) sources.dosage = { value: dosage, isDate: false };
  sources.status = { value: statement.status, isDate: false };
  return { coding: itemCoding(concept, systems), date: start ?? statement.dateAsserted ?? null, sources };
}

/**
 * A medication's `end` and `ongoing`. One whose status says it ended carries that: its end date when the
 * resource gives one, else the mark `UNK`, never an empty stop date, which on a concomitant-medication
 * form reads as "still taken" (a 2016 penicillin course at a 2018 screening). An active one without an
 * end date stays open.
 */
function medicationPeriodEnd(sources: Partial<Record<HistorySource, SourceValue>>, status: string, end: string | undefined): void {
  const ended = ENDED_MEDICATION_STATUS.has(status);
  if (end) sources.end = { value: end, isDate: true };
  else if (ended) sources.end = { value: 'UNK', isDate: false, mark: true };
  sources.ongoing = { value: !end && !ended, isDate: false };
}

/**
 * The medication's concept: `medicationCodeableConcept`, or the code of the Medication that
 * `medicationReference` points at (contained or in the file). A Medication outside the file leaves only
 * the reference's display.
 */
function medicationConcept(
  resource: fhir4.MedicationRequest | fhir4.MedicationStatement,
  index: ResourceIndex,
): fhir4.CodeableConcept | undefined {
  if (resource.medicationCodeableConcept) return resource.medicationCodeableConcept;
  const ref = resource.medicationReference;
  if (!ref) return undefined;
  const resolved = ref.reference ? resolveReference(index, ref.reference, resource) : null;
  const medication = resolved?.where === 'contained' ? resolved.resource : resolved?.entry.resource;
  if (medication?.resourceType === 'Medication' && (medication as fhir4.Medication).code) return (medication as fhir4.Medication).code;
  return ref.display ? { text: ref.display } : undefined;
}

function preferredCoding(concept: fhir4.CodeableConcept | undefined, systems: readonly string[]): fhir4.Coding | undefined {
  for (const system of systems) {
    const coding = concept?.coding?.find((c) => c.system === system && c.code);
    if (coding) return coding;
  }
  return undefined;
}

function codedSources(concept: fhir4.CodeableConcept | undefined, systems: readonly string[]): Partial<Record<HistorySource, SourceValue>> {
  const preferred = preferredCoding(concept, systems);
  const display = preferred?.display ?? concept?.text ?? concept?.coding?.find((c) => c.display)?.display;
  const sources: Partial<Record<HistorySource, SourceValue>> = {};
  if (display) sources.display = { value: display, isDate: false };
  if (preferred?.code) sources.code = { value: preferred.code, isDate: false };
  return sources;
}

function itemCoding(concept: fhir4.CodeableConcept | undefined, systems: readonly string[]): ItemCoding {
  const coding = preferredCoding(concept, systems) ?? concept?.coding?.find((c) => c.code);
  if (coding) return { system: coding.system ?? '', code: coding.code ?? '', display: coding.display ?? concept?.text ?? null };
  return { system: '', code: '', display: concept?.text ?? null };
}

function hasCode(concept: fhir4.CodeableConcept | undefined, codes: ReadonlySet<string>): boolean {
  return concept?.coding?.some((c) => c.code !== undefined && codes.has(c.code)) ?? false;
}

/**
 * A dosage as text: each instruction's `text`, else its dose and frequency composed
 * (`1 tablet, 2 per 1 d, as needed`); several instructions joined by `; `.
 */
function dosageText(dosages: fhir4.Dosage[] | undefined): string | null {
  const parts = (dosages ?? []).map((dosage) => {
    if (dosage.text) return dosage.text;
    const pieces: string[] = [];
    const dose = dosage.doseAndRate?.[0]?.doseQuantity;
    if (dose?.value !== undefined) {
      const unit = dose.unit ?? dose.code;
      pieces.push(unit ? `${dose.value} ${unit}` : String(dose.value));
    }
    const repeat = dosage.timing?.repeat;
    if (repeat?.frequency !== undefined && repeat.period !== undefined && repeat.periodUnit) {
      pieces.push(`${repeat.frequency} per ${repeat.period} ${repeat.periodUnit}`);
    }
    if (dosage.asNeededBoolean) pieces.push('as needed');
    return pieces.join(', ');
  });
  const text = parts.filter((p) => p !== '').join('; ');
  return text === '' ? null : text;
}
