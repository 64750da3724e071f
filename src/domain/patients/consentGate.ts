import type { Consent } from '../stores.js';

/**
 * Whether a patient's data may be entered (interface description, Authentication 7). When the study requires
 * consent before data entry, the latest consent record must be given and not withdrawn. In every study, a
 * withdrawal closes data entry until consent is given again: a patient who withdrew was not asked for, and
 * did not agree to, anything collected after it, whether or not the study asked for consent before the first value.
 */
export function consentAllowsEntry(consentRequired: boolean, latest: Consent | undefined): boolean {
  if (latest?.withdrawnOn) return false;
  if (!consentRequired) return true;
  return Boolean(latest?.givenOn);
}
