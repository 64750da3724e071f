import { createHash } from 'node:crypto';
import type { Actor } from '../actor.js';
import type { KeyContext } from '../apiKeys/keyContext.js';
import { auditEntry } from '../auditTrail.js';
import { canonical } from '../canonicalJson.js';
import { DomainError } from '../errors.js';
import { consentAllowsEntry } from '../patients/consentGate.js';
import { submitRecords } from '../records/submitRecords.js';
import type { AuditStore, FhirImportStore, PatientStore, QueryStore, RecordStore, Study, StudyStore, WebhookStore } from '../stores.js';
import { designForKey, hiddenFormCodes } from '../studies/designForKey.js';
import { studyEvent } from '../webhooks/webhookEvents.js';
import type { FhirEntry } from './fhirEntry.js';
import { tableOf } from './cellField.js';
import { importIdOf } from './importId.js';
import { itemAt } from './itemAt.js';
import { countItems, waitsForDecision, type FhirImportCounts, type FhirImportItem } from './fhirImportItem.js';
import { currentRecords, itemRecords, savedLookup } from './itemRecords.js';
import { adverseEventCandidates, itemPlacements, type ItemPlacement } from './itemPlacement.js';
import { mapToEcrf } from './mapToEcrf.js';
import { patientForKey } from '../patients/patientReach.js';
import { checkPatientIdentity } from './patientIdentity.js';
import { validateR4 } from './validateR4.js';
import { requireUnlocked } from '../studies/requireUnlocked.js';

type Stores = { studies: StudyStore; patients: PatientStore; records: RecordStore; queries: QueryStore; audit: AuditStore; fhirImports: FhirImportStore; webhooks: WebhookStore };

export interface FhirImportResult {
  id: number;
  number: number;
  subject: string;
  status: 'proposed' | 'saved';
  mode: 'review' | 'save';
  counts: FhirImportCounts;
  items: FhirImportItem[];
  /** Why each item sits at its visit, by position; null for an item without a visit or a date. */
  placements: (ItemPlacement | null)[];
  /** True when the same content already waited for review as this import, which is returned instead of a new one. */
  repeated: boolean;
}

/**
 * SHA-256 (hex) of a file's resources in file order, each with its Bundle fullUrl, members sorted by name
 * at every depth: the same record sent again, whitespace, member order or Bundle/NDJSON wrapping aside,
 * has the same hash (issue 19, point 6). The text digested is `JSON.stringify(canonical([[fullUrl, resource], …]))`,
 * fed to the hash one resource at a time, so that no canonical copy or text of the whole file is ever held.
 */
export function fhirContentHash(entries: readonly FhirEntry[]): string {
  const hash = createHash('sha256');
  entries.forEach((entry, i) => {
    hash.update((i === 0 ? '[' : ',') + JSON.stringify([entry.fullUrl ?? null, canonical(entry.resource)]));
  });
  return hash.update(entries.length === 0 ? '[]' : ']').digest('hex');
}

/**
 * What makes a file "the same content" as one whose import waits, for the patient and mode: its resources'
 * hash (fhirContentHash) and, for a key that may not see every form (blinding), the forms hidden from it. An
 * import is mapped onto the forms its key sees only, so the same file from a key that sees other forms is
 * another import: answered with one mapped for fewer forms, an unblinded key would never get the values of
 * the unblinded team's forms.
 */
export function importContentKey(entries: readonly FhirEntry[], hiddenForms: ReadonlySet<string>): string {
  const resources = fhirContentHash(entries);
  if (hiddenForms.size === 0) return resources;
  return createHash('sha256').update(JSON.stringify([resources, [...hiddenForms].sort()])).digest('hex');
}

/**
 * Places a patient's FHIR R4 record into the eCRF (interface description, "FHIR call rules"). The
 * file must be valid R4 and concern exactly this patient. In review mode nothing is saved: the
 * import waits, `proposed`, on the patient's card. In save mode the values that fill empty places
 * and new records are saved at once through the records path, on behalf of the key's maker; a value
 * that would change a saved value is never saved that way and stays proposed for the site's review.
 * A file that leaves nothing to review (nothing mapped, or every value equal to the saved one) ends
 * `saved` in both modes, so it never shows as waiting. The same content sent again for the patient and
 * mode, by a key that sees the same forms, while its import still waits returns that import instead of
 * making a second one.
 */
export async function importFhirRecord(
  stores: Stores,
  key: KeyContext,
  study: Study,
  input: { subject: string; mode: 'review' | 'save'; entries: FhirEntry[] },
): Promise<FhirImportResult> {
  requireUnlocked(stores.audit, study);
  const patient = await patientForKey(stores.patients, key, study, input.subject);
  if (!consentAllowsEntry(study.consentRequired, patient.consent)) throw new DomainError('consent_missing', { subject: input.subject });
  validateR4(input.entries);
  const identity = checkPatientIdentity(input.entries, {
    subject: patient.subject, sex: patient.sex as 'female' | 'male' | 'other' | 'unknown', birthYear: patient.birthYear, linkedIdentity: patient.fhirIdentity,
  });
  const contentHash = importContentKey(input.entries, hiddenFormCodes(study, key.makerUnblinded));
  const waiting = await stores.fhirImports.findProposedByContent(patient.id, input.mode, contentHash);
  if (waiting) {
    // Only an import mapped for the same hidden forms matches (importContentKey): it holds nothing this key may not see.
    return { id: waiting.id, number: waiting.number, subject: patient.subject, status: 'proposed', mode: waiting.mode, counts: waiting.counts, items: waiting.items, placements: itemPlacements(waiting.items, study.design, patient.enrolledOn), repeated: true };
  }
  const ids = await stores.studies.designIds(study);
  const sites = await stores.studies.sites(study);
  const design = designForKey(study, sites, key);
  const current = currentRecords(await stores.records.forPatient(patient.id), ids.visits, ids.forms);
  const { items } = mapToEcrf(input.entries, design, { enrolledOn: patient.enrolledOn, saved: savedLookup(current) });
  if (input.mode === 'save') {
    const maker: Actor = { kind: 'user', userId: key.makerId, name: key.makerName, via: 'fhir_save', keyName: key.keyName };
    // Adverse-event candidates (conditions begun after enrolment) are for the site to judge, never saved here.
    const isCandidate = adverseEventCandidates(design);
    // A measurement date is saved only with a value it dates: a form whose values all wait (a tie, a
    // conflict) does not get its date on its own.
    const dateFields = new Set(design.fhir_mapping.observations.flatMap((m) => (m.date_field ? [`${m.form}|${m.date_field}`] : [])));
    const isDate = (item: FhirImportItem) => item.row === null && dateFields.has(`${item.form}|${item.field}`);
    const placeOf = (item: FhirImportItem) => `${item.visit}|${item.instance}|${item.form}`;
    const saving = (item: FhirImportItem) => item.state === 'new' && !isCandidate(item);
    const dated = new Set(items.filter((item) => saving(item) && !isDate(item)).map(placeOf));
    const fresh = new Set(items.flatMap((item, position) => (saving(item) && (!isDate(item) || dated.has(placeOf(item))) ? [position] : [])));
    const records = itemRecords(patient.subject, items, fresh, current);
    const outcomes = await submitRecords(stores, maker, { siteIds: key.siteIds, unblinded: key.makerUnblinded }, study, records.map((r) => r.input), {
      validateOnly: false, source: 'fhir', fillOnly: true,
    });
    // A record refused by a check saves none of its items: they stay `new`, waiting for the site's review.
    outcomes.forEach((outcome, i) => {
      if (outcome.status !== 'ok' && outcome.status !== 'warn') return;
      for (const position of records[i]?.positions ?? []) {
        const item = itemAt(items, position);
        const field = item.row === null ? item.field! : tableOf(item.field!);
        if (!outcome.notFilled.includes(field)) item.state = 'saved';
      }
    });
  }
  const counts: FhirImportCounts = countItems(items);
  // A tie is skipped, so save mode saved nothing for it, but it waits for the site team's pick.
  const status = items.some(waitsForDecision) ? 'proposed' : 'saved';
  const number = await stores.fhirImports.nextNumber(patient.id);
  // The forms hidden from blinded people: an import with items on them is kept out of their audit read.
  const unblindedTeamForms = hiddenFormCodes(study, false);
  const id = await stores.fhirImports.insert(
    {
      studyId: study.id, patientId: patient.id, apiKeyId: key.keyId, number, mode: input.mode, status, counts: { ...counts }, fhirIdentity: identity.identifiers, contentHash,
      unblindedTeamItems: items.some((item) => item.form !== null && unblindedTeamForms.has(item.form)),
    },
    items,
  );
  const actor: Actor = { kind: 'api_key', keyId: key.keyId, keyName: key.keyName, makerId: key.makerId };
  await stores.audit.append([auditEntry(actor, study.id, { action: `fhir.import_${status}`, patientId: patient.id, details: { import_id: id, number, mode: input.mode, counts } })]);
  if (status === 'proposed') {
    const site = sites.find((s) => s.id === patient.siteId)!;
    await stores.webhooks.publish([studyEvent(study, 'fhir_import.proposed', { subject: patient.subject, site: site.number, import_id: importIdOf(study.code, patient.subject, number) })]);
  }
  return { id, number, subject: patient.subject, status, mode: input.mode, counts, items, placements: itemPlacements(items, study.design, patient.enrolledOn), repeated: false };
}
