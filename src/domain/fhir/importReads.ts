/**
 * The read calls on FHIR imports (issue 22.1): a sending system learns what became of its files, with
 * the rules of the other read calls (read right, the key's sites, no unblinded-team form for a blinded
 * maker, no patient who withdrew consent to data use, every read logged).
 *
 * Decisions, where the interface description is silent:
 * - An import is named by the `import` identifier the FHIR call returned (`importId.ts`); one the key
 *   may not see is refused like one that does not exist, so nobody learns of other sites' patients.
 * - The list gives imports without items (an import holds up to hundreds of them); one import's read
 *   gives them, each with its `outcome` after the decision (`itemOutcome`).
 * - For a blinded maker's key, items on unblinded-team forms are left out and the counts are recounted
 *   from what is shown, so a count cannot tell that a hidden value conflicts (the list's counts are
 *   recounted in the database: src/db/fhirImportReads.ts).
 */
import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError } from '../errors.js';
import { readPage, type Page, type ReadRequest } from '../reads/readPage.js';
import type { FhirImportReadRow, FhirImportReadStore, PatientStore, ReadLogStore, ReadStore, Study, StudyStore } from '../stores.js';
import { hiddenFormCodes, hiddenFormIds } from '../studies/designForKey.js';
import { withoutHiddenItems, type FhirImportItem } from './fhirImportItem.js';
import { importRefOf } from './importId.js';
import { itemPlacements, type ItemPlacement } from './itemPlacement.js';

type Stores = { studies: StudyStore; reads: ReadStore; readLog: ReadLogStore; fhirImportReads: FhirImportReadStore; patients: PatientStore };

export type ItemOutcome = NonNullable<FhirImportItem['outcome']>;

/**
 * What became of an item. A confirmation marks what it saved (`confirmed`) and the conflicts whose saved
 * value it kept (`kept_saved_value`); everything else follows from the item's state and the import's status:
 * an item that waited (`new`, `conflict`, a tie) is `pending` while the import is proposed, `rejected` with
 * the import, and `not_taken` when a confirmation left it out.
 */
export function itemOutcome(status: FhirImportReadRow['status'], item: FhirImportItem): ItemOutcome {
  if (item.outcome) return item.outcome;
  if (item.state === 'saved' || item.state === 'same') return item.state;
  if (item.state === 'skipped' && !item.tie) return 'skipped';
  return status === 'proposed' ? 'pending' : status === 'rejected' ? 'rejected' : 'not_taken';
}

/**
 * One import with its items and their outcomes.
 *
 * @throws DomainError `fhir_import_not_found` when the key may see no import of that identifier
 */
export async function getFhirImport(
  stores: Stores, key: KeyContext, study: Study, id: string,
): Promise<FhirImportReadRow & { items: FhirImportItem[]; placements: (ItemPlacement | null)[] }> {
  const ref = importRefOf(study.code, id);
  const hidden = hiddenFormCodes(study, key.makerUnblinded);
  const ids = await stores.studies.designIds(study);
  const scope = { studyId: study.id, siteIds: key.siteIds, hiddenFormIds: hiddenFormIds(study, ids, key.makerUnblinded) };
  const found = ref && (await stores.fhirImportReads.find(scope, ref.subject, ref.number));
  if (!ref || !found?.items) throw new DomainError('fhir_import_not_found', { import: id });
  // A refused read is not a read, as in the other read calls: only an import shown is logged.
  await stores.readLog.logRead({ keyId: key.keyId, studyId: study.id, operation: 'fhir_import', filters: { import: id }, rows: 1 });
  const seen = withoutHiddenItems({ ...found, items: found.items }, hidden);
  // Why each item sits at its visit, as the FHIR call said when it made the import (it counts from the enrolment day).
  const patient = await stores.patients.findBySubject(study.id, ref.subject);
  const placements = patient ? itemPlacements(seen.items, study.design, patient.enrolledOn) : seen.items.map(() => null);
  return { ...seen, items: seen.items.map((item) => ({ ...item, outcome: itemOutcome(found.status, item) })), placements };
}

/** One page of the study's imports, without items, paged like every read call (`readPage`). */
export function listFhirImports(stores: Stores, key: KeyContext, study: Study, request: ReadRequest): Promise<Page<FhirImportReadRow>> {
  return readPage(stores, key, study, 'fhir_imports', request, (scope, filters, position) => stores.fhirImportReads.page(scope, filters, position));
}
