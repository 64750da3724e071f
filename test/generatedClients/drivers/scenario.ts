// What every driver shares: the service it talks to, the FHIR record it sends, and how it reports.
export const env = {
  url: process.env.SDX_URL ?? '',
  key: process.env.SDX_KEY ?? '',
  study: process.env.SDX_STUDY ?? '',
  fhirSubject: process.env.SDX_FHIR_SUBJECT ?? '',
};

/** The spec's single-resource example: a heart rate the study's FHIR mapping places in the eCRF. */
export const observation = {
  resourceType: 'Observation', id: 'hr-20260309', status: 'final', subject: { reference: 'Patient/p-7f3a' },
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
  effectiveDateTime: '2026-03-09T09:40:00+03:00', valueQuantity: { value: 76, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
};

export interface Outcome {
  study: string;
  enrolled: string;
  pages: number;
  subjects: string[];
  refusal: { status: number; code: string };
  /** The FHIR import's status (`proposed` in review mode). */
  fhir: string;
}

/** Reads every page, sending each `next` back as `after` until it is null: the paged read of the walk-through. */
export async function readAllPages(read: (after: string | undefined) => Promise<{ patients: { subject: string }[]; next?: string | null }>): Promise<{ pages: number; subjects: string[] }> {
  const subjects: string[] = [];
  let pages = 0;
  let after: string | undefined;
  do {
    const page = await read(after);
    pages += 1;
    subjects.push(...page.patients.map((p) => p.subject));
    after = page.next ?? undefined;
  } while (after);
  return { pages, subjects };
}

export function report(outcome: Outcome): void {
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}
