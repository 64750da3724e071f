import type { NotDoneMark } from './recordContent.js';

/**
 * A not-done mark written as text, as the audit trail's old and new values and a FHIR item's saved value
 * show it: `[ND]`, `[UNK]` or `[NA]`. A text value may be written the same way, so where both can stand
 * the text alone does not tell them apart: an audit row says which it holds (`valueKinds`), a saved value
 * says whether it is a mark (`SavedValue.notDone`).
 */
export function markText(mark: NotDoneMark): string {
  return `[${mark}]`;
}

/** The mark a text is written like, if any. */
export function markWrittenIn(text: string): NotDoneMark | undefined {
  const mark = /^\[(ND|UNK|NA)\]$/.exec(text)?.[1];
  return mark as NotDoneMark | undefined;
}

/** What an audit value written like a mark holds: the mark itself, or a field's text that reads like it. */
export type AuditValueKind = 'not_done' | 'value';

/** What an audit row's `details` say its old or new value holds, if they say it. */
export function auditValueKind(details: Record<string, unknown>, value: 'old_value' | 'new_value'): AuditValueKind | undefined {
  const kind = details[`${value}_kind`];
  return kind === 'not_done' || kind === 'value' ? kind : undefined;
}
