import type { KeyContext } from '../apiKeys/keyContext.js';
import { patientForKey } from '../patients/patientReach.js';
import type { PatientStore, Study } from '../stores.js';
import { hiddenFormCodes } from '../studies/designForKey.js';
import { withoutHiddenItems, type FhirImportCounts, type FhirImportItem } from './fhirImportItem.js';

/**
 * A FHIR call's kept answer as the key may see it when the same `Idempotency-Key` comes again
 * (src/domain/idempotency/onceForKey.ts): refused when its patient is out of the key's reach now, and
 * without the items on forms hidden from the key now (its maker blinded since), as `getFhirImport` shows
 * the import.
 *
 * @throws DomainError `unknown_subject`
 */
export async function importAsSeenNow<A extends { subject: string; counts: FhirImportCounts; items: Pick<FhirImportItem, 'form' | 'state'>[] }>(
  patients: PatientStore, key: Pick<KeyContext, 'siteIds' | 'makerUnblinded'>, study: Study, kept: A,
): Promise<A> {
  await patientForKey(patients, key, study, kept.subject);
  return withoutHiddenItems(kept, hiddenFormCodes(study, key.makerUnblinded));
}
