/// <reference types="fhir" />
/**
 * The values an Observation carries, each with the codes that name it: the Observation's own `value[x]`
 * under its own `code`, and each component's `value[x]` under the component's `code`. That is how
 * systolic and diastolic pressure (8480-6, 8462-4) come out of a blood-pressure panel (85354-9, or
 * 55284-4 in Synthea v2.4), which has no value of its own.
 */

/** The UCUM code system; quantities in another system (SNOMED CT units in the HL7 f204 example) are not UCUM. */
const UCUM_SYSTEM = 'http://unitsofmeasure.org';

/** One `value[x]` of FHIR R4, reduced to what the mapping needs. */
export type FhirValue =
  | { kind: 'quantity'; value: number; comparator: string | null; ucumUnit: string | null; unitText: string | null }
  | { kind: 'concept'; concept: fhir4.CodeableConcept }
  | { kind: 'string'; text: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'integer'; value: number }
  | { kind: 'dateTime'; text: string }
  | { kind: 'time'; text: string }
  /** Range, Ratio, SampledData, Period: no field type holds them. */
  | { kind: 'unsupported'; type: string };

/** A value of an Observation and the coding that names it. */
export interface ObservedValue {
  codings: fhir4.Coding[];
  /** `code.text`, for naming a value that has no coding. */
  text: string | null;
  value: FhirValue;
  /** Index of the component the value came from, or null for the Observation's own value. */
  component: number | null;
}

/**
 * Statuses whose values are not results. An entered-in-error value was wrong, and a cancelled
 * Observation carries none (the HL7 `blood-pressure-cancel` example has only data-absent reasons).
 */
const NOT_RESULTS = new Set(['cancelled', 'entered-in-error']);

/**
 * The values of an Observation: its own value[x] and its components' values, in that order. Values
 * that are absent (`dataAbsentReason`, a Quantity without a number) are left out, and so is every value
 * of a cancelled or entered-in-error Observation.
 */
export function observedValues(observation: fhir4.Observation): ObservedValue[] {
  if (NOT_RESULTS.has(observation.status)) return [];
  const out: ObservedValue[] = [];
  const own = valueOf(observation);
  if (own) out.push({ codings: observation.code?.coding ?? [], text: observation.code?.text ?? null, value: own, component: null });
  (observation.component ?? []).forEach((component, index) => {
    const value = valueOf(component);
    if (value) out.push({ codings: component.code?.coding ?? [], text: component.code?.text ?? null, value, component: index });
  });
  return out;
}

type ValueHolder = Pick<
  fhir4.Observation,
  | 'valueQuantity'
  | 'valueCodeableConcept'
  | 'valueString'
  | 'valueBoolean'
  | 'valueInteger'
  | 'valueDateTime'
  | 'valueTime'
  | 'valueRange'
  | 'valueRatio'
  | 'valueSampledData'
  | 'valuePeriod'
>;

function valueOf(holder: ValueHolder): FhirValue | null {
  const q = holder.valueQuantity;
  if (q) {
    if (typeof q.value !== 'number') return null;
    return { kind: 'quantity', value: q.value, comparator: q.comparator ?? null, ucumUnit: ucumUnitOf(q), unitText: q.unit ?? null };
  }
  if (holder.valueCodeableConcept) return { kind: 'concept', concept: holder.valueCodeableConcept };
  if (typeof holder.valueString === 'string') return { kind: 'string', text: holder.valueString };
  if (typeof holder.valueBoolean === 'boolean') return { kind: 'boolean', value: holder.valueBoolean };
  if (typeof holder.valueInteger === 'number') return { kind: 'integer', value: holder.valueInteger };
  if (typeof holder.valueDateTime === 'string') return { kind: 'dateTime', text: holder.valueDateTime };
  if (typeof holder.valueTime === 'string') return { kind: 'time', text: holder.valueTime };
  if (holder.valueRange) return { kind: 'unsupported', type: 'Range' };
  if (holder.valueRatio) return { kind: 'unsupported', type: 'Ratio' };
  if (holder.valueSampledData) return { kind: 'unsupported', type: 'SampledData' };
  if (holder.valuePeriod) return { kind: 'unsupported', type: 'Period' };
  return null;
}

/**
 * The UCUM code of a quantity's unit: `code` when the system is UCUM; `code` or else `unit` when no
 * system is given (some senders put the UCUM string only in `unit`); null for any other system, whose
 * codes cannot be converted (the human-readable `unit` beside them is not trusted to be UCUM).
 */
function ucumUnitOf(quantity: fhir4.Quantity): string | null {
  if (quantity.system === UCUM_SYSTEM) return quantity.code ?? null;
  if (quantity.system === undefined) return quantity.code ?? quantity.unit ?? null;
  return null;
}

/** The value and unit as the resource gives them (`original` of an import item). */
export function originalOf(value: FhirValue): { value: string; unit: string | null } {
  switch (value.kind) {
    case 'quantity':
      return { value: `${value.comparator ?? ''}${value.value}`, unit: value.ucumUnit ?? value.unitText };
    case 'concept': {
      const coding = value.concept.coding?.find((c) => c.code);
      return { value: coding?.code ?? value.concept.text ?? '', unit: null };
    }
    case 'string':
    case 'dateTime':
    case 'time':
      return { value: value.text, unit: null };
    case 'boolean':
      return { value: String(value.value), unit: null };
    case 'integer':
      return { value: String(value.value), unit: null };
    case 'unsupported':
      return { value: value.type, unit: null };
  }
}
