import type { WriteAccess } from '../records/submitRecords.js';
import { DomainError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import type { PatientStore, QueryForStep, QueryStore, Study, StudyStore } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';

/**
 * The study's query of that id when the writer may take a step on it, row-locked for the step. A query
 * of another site, on a form hidden from the writer, or of a patient who withdrew consent to the use
 * of their data is reported exactly like one that does not exist, as the read calls leave them out;
 * a patient whose consent does not allow data entry is refused as a record would be.
 */
export async function reachableQuery(
  stores: { studies: StudyStore; patients: PatientStore; queries: QueryStore },
  access: WriteAccess,
  study: Study,
  queryId: number,
): Promise<QueryForStep> {
  const query = await stores.queries.findForStep(study.id, queryId);
  const ids = await stores.studies.designIds(study);
  const form = query && study.design.forms.find((f) => ids.forms.get(f.code) === query.formId);
  const [patient] = query ? await stores.patients.findBySubjects(study.id, [query.subject]) : [];
  if (!query || !form || !patient || !access.siteIds.includes(query.siteId) || formHidden(study, form, access.unblinded) || patient.dataUseWithdrawnAt) {
    throw new DomainError('query_not_found', { id: queryId });
  }
  if (!consentAllowsEntry(study.consentRequired, patient.consent)) throw new DomainError('consent_missing', { subject: patient.subject });
  return query;
}
