import type { Consent } from '../stores.js';

/**
 * Whether a patient's data may be entered: when the study requires consent before data entry, the
 * latest consent record must be given and not withdrawn (interface description, Authentication 7).
 */
export function consentAllowsEntry(consentRequired: boolean, latest: Consent | undefined): boolean {
  if (!consentRequired) return true;
  return Boolean(latest?.givenOn) && !latest?.withdrawnOn;
}
