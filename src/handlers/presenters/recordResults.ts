import type { components } from '../../../generated/openapi.js';
import type { RecordOutcome } from '../../domain/records/submitRecords.js';
import type { FieldIssue } from '../../domain/records/recordContent.js';
import { paramText, translate, type Lang } from '../../messages/index.js';

type Wire = components['schemas'];

/**
 * The catalogue key of a result's message: `record.<code>`, with a variant where one code has
 * several texts: the number of queries opened (one, or more), or a validated draft.
 */
export function resultMessageKey(outcome: Pick<RecordOutcome, 'code' | 'queriesOpened' | 'params'>): string {
  const queries = outcome.queriesOpened === 1 ? '.one' : '.queries';
  if (outcome.code === 'saved_with_queries') return `record.saved_with_queries${queries}`;
  if (outcome.code === 'validated') return `record.validated${outcome.queriesOpened > 0 ? queries : outcome.params.draft ? '.draft' : ''}`;
  return `record.${outcome.code}`;
}

/** The catalogue key of a field issue's message; null for edit checks, whose texts come from the design. */
export function issueMessageKey(issue: FieldIssue): string | null {
  if (issue.code.startsWith('edit_check:')) return null;
  return `field.${issue.code}${issue.params?.variant ? `.${paramText(issue.params.variant)}` : ''}`;
}

/** A field issue in the reader's language; edit checks carry their own English and Russian message from the design. */
function issueMessage(lang: Lang, issue: FieldIssue): string {
  const key = issueMessageKey(issue);
  if (key === null) return String(issue.params?.[lang === 'ru' ? 'message_ru' : 'message'] ?? issue.params?.message);
  return translate(lang, key, issue.params ?? {});
}

/** The records call's body: each outcome localized, in request order, and the counts per status. */
export function toRecordsResultDto(outcomes: RecordOutcome[], lang: Lang): Wire['RecordsResult'] {
  const counts = { ok: 0, warn: 0, skip: 0, error: 0 };
  const results = outcomes.map((o) => {
    counts[o.status] += 1;
    return {
      index: o.index,
      status: o.status,
      code: o.code,
      message: translate(lang, resultMessageKey(o), o.params),
      record_id: o.recordId,
      queries_opened: o.queriesOpened,
      errors: o.issues.map((i) => ({ field: i.field, code: i.code, message: issueMessage(lang, i) })),
    };
  });
  return { results, counts };
}
