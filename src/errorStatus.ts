import { isDomainError, type DomainError, type ErrorCode } from './domain/errors.js';

/**
 * The only place that knows HTTP status: a stable error code maps to its status here, and to its
 * English and Russian text in src/messages. The API answers a refusal with this status in a problem
 * body (src/handlers/problem.ts), the staff portal with an HTML page (src/portal).
 */
const STATUS: Record<ErrorCode, number> = {
  invalid_parameter: 400,
  invalid_after: 400,
  unauthorized: 401,
  key_missing: 401,
  key_malformed: 401,
  key_unknown: 401,
  key_revoked: 401,
  key_expired: 401,
  key_stopped: 401,
  right_missing: 403,
  api_disabled: 403,
  study_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  body_timeout: 408,
  subject_taken: 409,
  payload_too_large: 413,
  request_too_large: 431,
  malformed_request: 400,
  too_many_records: 413,
  unsupported_media_type: 415,
  invalid_body: 422,
  unknown_form_or_visit: 422,
  unknown_site: 422,
  subject_other_site: 422,
  unknown_subject: 422,
  consent_missing: 422,
  fhir_not_fhir: 422,
  fhir_other_patient: 422,
  fhir_two_patients: 422,
  fhir_identity_mismatch: 422,
  idempotency_key_reused: 422,
  study_locked: 423,
  enrolment_closed: 423,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  busy: 503,
  // Refusals of the staff portal's pages and forms (src/portal), shown as HTML pages with these statuses.
  sign_in_failed: 401,
  portal_forbidden: 403,
  csrf_failed: 403,
  portal_not_found: 404,
  not_a_manager: 403,
  export_right_missing: 403,
  invalid_key_name: 422,
  key_rights_missing: 422,
  invalid_key_term: 422,
  site_not_allowed: 422,
  key_sites_missing: 422,
  key_not_found: 404,
  key_already_revoked: 409,
  portal_bad_form: 400,
  import_nothing_chosen: 422,
  // Decisions on a FHIR import (src/domain/fhir/importDecision.ts), taken on the review page.
  import_decision_not_allowed: 403,
  import_not_found: 404,
  dataset_not_found: 404,
  import_already_decided: 409,
  import_needs_unblinded_team: 403,
  invalid_import_choice: 422,
  import_outdated: 409,
  import_items_refused: 422,
  import_reason_required: 422,
  fhir_import_not_found: 404,
  // Webhook subscriptions, managed on the portal's API page and with `sdx webhook`.
  webhook_url_refused: 422,
  webhook_events_invalid: 422,
  webhook_not_found: 404,
  // Refusals of the command line and of the people and study administration it drives.
  study_exists: 409,
  design_invalid: 422,
  invalid_email: 422,
  invalid_name: 422,
  password_too_short: 422,
  user_not_found: 404,
  role_not_found: 404,
  invalid_reads_limit: 422,
  // Consent recorded on the patient card or with `sdx patient consent` (src/domain/patients/recordConsent.ts).
  consent_not_given: 409,
  consent_dates: 422,
  consent_date_invalid: 422,
  consent_date_in_future: 422,
  consent_date_before_birth: 422,
  // Steps on a query (src/domain/queries).
  query_not_found: 404,
  query_closed: 409,
  query_not_closable: 409,
  query_place_unknown: 422,
};

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/**
 * A refusal the person can act on (a domain error below 500), as opposed to a failure of the service,
 * which the error middleware logs and answers with only the request id.
 */
export function isRefusal(error: unknown): error is DomainError {
  return isDomainError(error) && statusOf(error.code) < 500;
}
