import { AssertionError } from 'chai';

/**
 * Read pages carry only the members the spec lists: never a patient's birth year or hospital identity
 * (spec, "Reading data"), the private attributes a patient has. Every answer a test receives through
 * `TestApp.call` or the `PortalClient` is checked as it arrives, so a leak fails the test that received
 * it, whichever file that is and in whatever order the files run. test/api/privacy.test.ts proves the
 * scan works and reads its own patients' private values through every read call, and asks the root hook
 * (test/helpers/rootHooks.ts) to check at the end of the run that answers of other files were scanned
 * too: run alone, it fails.
 *
 * The state is kept on globalThis: mocha loads the root hook through `require` and the tests through
 * `import`, which gives two copies of this module, and both must count the same answers.
 */

/** The members a row of each read page may carry (spec, `PatientRead`, `RecordRead`, `QueryRead`, `AuditRead`, `FhirImportSummary`). */
const READ_ROW_MEMBERS: Record<string, string[]> = {
  patients: ['subject', 'site', 'sex', 'enrolled_on', 'status', 'updated_at'],
  records: ['id', 'subject', 'site', 'visit', 'form', 'instance', 'status', 'source', 'updated_at', 'values', 'not_done', 'tables'],
  queries: ['id', 'subject', 'site', 'visit', 'instance', 'form', 'field', 'status', 'origin', 'message', 'opened_at', 'closed_at', 'updated_at',
    'opened_by', 'answers', 'closed_by', 'close_reason'],
  audit: ['id', 'position', 'at', 'author', 'reason', 'action', 'subject', 'site', 'visit', 'form', 'instance', 'field', 'old_value', 'new_value',
    'details', 'actor_type', 'actor_id', 'study_id', 'patient_id', 'record_id', 'previous_hash', 'hash'],
  imports: ['import', 'number', 'subject', 'site', 'status', 'needs_review', 'mode', 'counts', 'review_url', 'created_at', 'updated_at',
    'decided_at', 'decided_by', 'rejection_reason'],
};
const PAGE_MEMBERS = ['next', 'watermark', 'removed'];
const REMOVAL_MEMBERS = ['subject', 'site', 'reason', 'removed_at'];

interface ScanState {
  /** The test file whose test is running; undefined in `before`/`after` hooks and between files. */
  currentFile: string | undefined;
  /** Answers scanned while a test of each file ran. */
  scannedByFile: Map<string, number>;
  /** The file that asked for the end-of-run check (the privacy file), if it ran. */
  checkRequestedBy: string | undefined;
}

const shared = globalThis as { sdxResponseScan?: ScanState };
const state = (shared.sdxResponseScan ??= { currentFile: undefined, scannedByFile: new Map(), checkRequestedBy: undefined });

/** Called by the root hooks around every test: answers are counted to the file whose test received them. */
export function noteCurrentFile(file: string | undefined): void {
  state.currentFile = file;
}

/**
 * Checks one answer of the service; throws an AssertionError naming what leaked. Only JSON answers:
 * the portal's HTML pages are for the site team, who may see a patient's private attributes.
 */
export function scanResponse(where: string, contentType: string, text: string): void {
  if (!/^application\/(problem\+)?json\b/.test(contentType)) return;
  if (state.currentFile !== undefined) state.scannedByFile.set(state.currentFile, (state.scannedByFile.get(state.currentFile) ?? 0) + 1);
  const problems = text ? readPageProblems(JSON.parse(text)) : [];
  if (problems.length > 0) throw new AssertionError(`${where} answered a read page with members the spec does not list: ${problems.join('; ')}`);
}

/** For a read page (an object with a watermark and the rows of one read call), the members it must not carry. */
function readPageProblems(page: unknown): string[] {
  if (typeof page !== 'object' || page === null || Array.isArray(page) || !('watermark' in page)) return [];
  const members = page as Record<string, unknown>;
  const [call, rowMembers] = Object.entries(READ_ROW_MEMBERS).find(([c]) => Array.isArray(members[c])) ?? [];
  if (!call || !rowMembers) return [];
  const extra = (object: object, allowed: string[]) => Object.keys(object).filter((m) => !allowed.includes(m));
  return [
    ...extra(members, [call, ...PAGE_MEMBERS]).map((m) => `page: ${m}`),
    ...(members[call] as object[]).flatMap((row) => extra(row, rowMembers).map((m) => `${call} row: ${m}`)),
    ...((members.removed ?? []) as object[]).flatMap((removal) => extra(removal, REMOVAL_MEMBERS).map((m) => `removal: ${m}`)),
  ];
}

/** Asks the root hook to check, once every file has run, that answers of files other than `file` were scanned. */
export function requireOtherFilesScanned(file: string): void {
  state.checkRequestedBy = file;
}

/**
 * The end-of-run check: when the privacy file ran, answers received by the tests of other files must
 * have been scanned, or its guarantee that no answer of the run leaks covered only its own.
 */
export function otherFilesScannedProblem(): string | undefined {
  const file = state.checkRequestedBy;
  if (file === undefined) return undefined;
  const others = [...state.scannedByFile].filter(([f]) => f !== file);
  if (others.reduce((sum, [, n]) => sum + n, 0) > 0) return undefined;
  return `${file} ran, but no answer received by another test file was scanned for private values: `
    + 'run it with the other API tests (test/helpers/responseScan.ts), or the privacy of their answers is unchecked';
}
