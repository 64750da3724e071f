import { actorRef, authorOf, type Actor } from '../actor.js';
import { DomainError, type FieldError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import type { WriteAccess } from '../records/submitRecords.js';
import type { AuditStore, PatientStore, QueryReadRow, QueryStore, RecordStore, Study, StudyStore, WebhookStore } from '../stores.js';
import { formHidden } from '../studies/designForKey.js';
import { queryablePlace, queryText } from './queryRules.js';
import { recordQueryStep } from './queryStep.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

/** The place a query is raised on, as a client names it (spec, QueryOpening). */
export interface QueryOpeningInput {
  subject: string;
  visit: string;
  instance?: number;
  form: string;
  field: string;
  message: string;
}

/** The place named wrongly: `query_place_unknown`, pointing at the member that is wrong. */
function unknownPlace(member: string, code: string, params: Record<string, unknown>): DomainError {
  const error: FieldError = { pointer: `/${member}`, code, params };
  return new DomainError('query_place_unknown', { member }, [error]);
}

/**
 * Raises a manual query on one field of a saved form instance (issue 22.2), opened by the actor, who
 * may then close it. The one path for an API key and a person on the portal. A patient of another site
 * and a form hidden from the actor are reported as ones that do not exist. Run it in one transaction.
 *
 * @returns the new query as the read calls show it
 */
export async function openQuery(
  stores: { studies: StudyStore; patients: PatientStore; records: RecordStore; queries: QueryStore; audit: AuditStore; webhooks: WebhookStore },
  actor: Actor,
  access: WriteAccess,
  study: Study,
  input: QueryOpeningInput,
): Promise<QueryReadRow> {
  requireUnlocked(stores.audit, study);
  const message = queryText(input.message, '/message');
  const [patient] = await stores.patients.findBySubjects(study.id, [input.subject]);
  if (!patient || !access.siteIds.includes(patient.siteId) || patient.dataUseWithdrawnAt) throw unknownPlace('subject', 'unknown_subject', { subject: input.subject });
  const visit = study.design.visits.find((v) => v.code === input.visit);
  if (!visit) throw unknownPlace('visit', 'unknown_visit', { visit: input.visit });
  const form = study.design.forms.find((f) => f.code === input.form);
  if (!form || formHidden(study, form, access.unblinded)) throw unknownPlace('form', 'unknown_form', { form: input.form });
  if (!visit.forms.includes(form.code)) throw unknownPlace('form', 'form_not_in_visit', { form: form.code, visit: visit.code });
  const instance = input.instance ?? 1;
  if (!visit.repeating && instance !== 1) throw unknownPlace('instance', 'invalid_instance', { visit: visit.code });
  if (!consentAllowsEntry(study.consentRequired, patient.consent)) throw new DomainError('consent_missing', { subject: patient.subject });
  const ids = await stores.studies.designIds(study);
  const [record] = await stores.records.findByKeys([{ patientId: patient.id, visitId: ids.visits.get(visit.code)!, formId: ids.forms.get(form.code)!, instance }]);
  if (!record) throw unknownPlace('form', 'form_not_entered', { form: form.code, visit: visit.code, instance });
  if (!queryablePlace(form, input.field, record.tables)) throw unknownPlace('field', 'unknown_field', { field: input.field });

  const [queryId] = await stores.queries.insert([{
    studyId: study.id, recordId: record.id, patientId: patient.id, siteId: patient.siteId, fieldCode: input.field, origin: 'manual',
    checkCode: null, message, openedBy: authorOf(actor), opener: actorRef(actor),
  }]);
  if (queryId === undefined) throw new Error('the query store gave no id for the query it inserted');
  return recordQueryStep(stores, actor, study, 'opened', queryId, {
    patientId: patient.id, recordId: record.id, fieldCode: input.field, newValue: message, details: { query_id: queryId },
  });
}
