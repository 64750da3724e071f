/**
 * Every code a `DomainError` may carry: the one list to extend when a new refusal appears. The
 * compiler then asks for its HTTP status (`STATUS` in src/errorStatus.ts) and its English and
 * Russian detail (src/messages/en.ts, ru.ts), so a typo or a missing entry fails the build
 * instead of becoming a 500 (issue 20.4). Codes are stable: clients and the portal branch on them.
 */
export type ErrorCode =
  // Refusals of a whole API request (spec/openapi.yaml, components/schemas/Problem).
  | 'invalid_parameter' | 'invalid_after' | 'invalid_body' | 'malformed_request' | 'request_too_large'
  | 'unauthorized' | 'key_missing' | 'key_malformed' | 'key_unknown' | 'key_revoked' | 'key_expired' | 'key_stopped'
  | 'right_missing' | 'api_disabled' | 'study_not_found' | 'not_found' | 'method_not_allowed' | 'subject_taken'
  | 'payload_too_large' | 'too_many_records' | 'unsupported_media_type' | 'body_timeout' | 'busy'
  | 'unknown_form_or_visit' | 'unknown_site' | 'unknown_subject' | 'consent_missing'
  | 'fhir_not_fhir' | 'fhir_other_patient' | 'fhir_two_patients' | 'fhir_identity_mismatch' | 'idempotency_key_reused'
  | 'study_locked' | 'enrolment_closed' | 'rate_limited' | 'internal' | 'unavailable'
  // Refusals of the staff portal's pages and forms.
  | 'sign_in_failed' | 'portal_forbidden' | 'csrf_failed' | 'portal_not_found' | 'portal_bad_form'
  | 'not_a_manager' | 'export_right_missing' | 'invalid_key_name' | 'key_rights_missing' | 'invalid_key_term'
  | 'site_not_allowed' | 'key_sites_missing' | 'key_not_found' | 'key_already_revoked'
  // Decisions on a FHIR import (src/domain/fhir/importDecision.ts), taken on the review page.
  | 'import_nothing_chosen' | 'import_decision_not_allowed' | 'import_not_found' | 'import_already_decided'
  | 'invalid_import_choice' | 'import_outdated' | 'import_items_refused'
  | 'import_reason_required' | 'import_needs_unblinded_team'
  // The read calls on FHIR imports (src/domain/fhir/importReads.ts).
  | 'fhir_import_not_found'
  // Refusals of the CDISC exports (src/domain/exports).
  | 'dataset_not_found'
  // Refusals of the command line (scripts/sdx.ts) and of the people and study administration it drives.
  | 'study_exists' | 'design_invalid' | 'invalid_email' | 'invalid_name' | 'password_too_short' | 'user_not_found'
  | 'role_not_found' | 'invalid_reads_limit' | 'consent_not_given' | 'consent_dates'
  // Consent recorded on the patient card or with `sdx patient consent` (src/domain/patients/recordConsent.ts).
  | 'consent_date_invalid' | 'consent_date_in_future' | 'consent_date_before_birth'
  // Enrolment (src/domain/patients/enrolPatient.ts).
  | 'subject_other_site'
  // Steps on a query: answer, raise, close (src/domain/queries).
  | 'query_not_found' | 'query_closed' | 'query_not_closable' | 'query_place_unknown'
  // Webhook subscriptions (src/domain/webhooks/subscriptions.ts).
  | 'webhook_url_refused' | 'webhook_events_invalid' | 'webhook_not_found';
