import type { WriteAccess } from '../records/submitRecords.js';
import { DomainError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import type { Consent, Patient, PatientStore, QueryForStep, QueryStore, Study, StudyStore } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';

/**
 * The study's query of that id when the writer may see it, row-locked: a query of another site, on a form
 * hidden from the writer, or of a patient who withdrew consent to the use of their data is reported exactly
 * like one that does not exist, as the read calls leave them out. What a replayed step on a query checks
 * (src/domain/idempotency/onceForKey.ts): the query its kept answer shows must still be one the key may see.
 *
 * @throws DomainError `query_not_found`
 */
export async function visibleQuery(
  stores: { studies: StudyStore; patients: PatientStore; queries: QueryStore },
  access: WriteAccess,
  study: Study,
  queryId: number,
): Promise<{ query: QueryForStep; patient: Patient & { consent: Consent | undefined } }> {
  const query = await stores.queries.findForStep(study.id, queryId);
  const ids = await stores.studies.designIds(study);
  const form = query && study.design.forms.find((f) => ids.forms.get(f.code) === query.formId);
  const [patient] = query ? await stores.patients.findBySubjects(study.id, [query.subject]) : [];
  if (!query || !form || !patient || !access.siteIds.includes(query.siteId) || formHidden(study, form, access.unblinded) || patient.dataUseWithdrawnAt) {
    throw new DomainError('query_not_found', { id: queryId });
  }
  return { query, patient };
}

/**
 * The study's query of that id when the writer may take a step on it, row-locked for the step: one the
 * writer may see (visibleQuery), of a patient whose consent allows data entry (refused as a record would be).
 */
export async function reachableQuery(
  stores: { studies: StudyStore; patients: PatientStore; queries: QueryStore },
  access: WriteAccess,
  study: Study,
  queryId: number,
): Promise<QueryForStep> {
  const { query, patient } = await visibleQuery(stores, access, study, queryId);
  if (!consentAllowsEntry(study.consentRequired, patient.consent)) throw new DomainError('consent_missing', { subject: patient.subject });
  return query;
}
