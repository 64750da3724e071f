import type { components } from '../../../generated/openapi.js';
import type { Page } from '../../domain/reads/readPage.js';
import type { PatientReadRow, QueryReadRow, RecordReadRow } from '../../domain/stores.js';
import { SerializedJson } from '../serializedJson.js';

type Wire = components['schemas'];

/** The paging members every read page carries. Read calls never return a patient's birth year or hospital identity. */
export function pageTail<Row extends { id: number }>(page: Page<Row>) {
  return {
    next: page.next,
    watermark: page.watermark,
    removed: page.removed.map((r) => ({ subject: r.subject, site: r.site, reason: r.reason as 'consent_withdrawn', removed_at: r.removedAt.toISOString() })),
  };
}

export function toPatientPageDto(page: Page<PatientReadRow>): Wire['PatientPage'] {
  return {
    patients: page.rows.map((p) => ({
      subject: p.subject, site: p.site, sex: p.sex as Wire['PatientRead']['sex'], enrolled_on: p.enrolledOn,
      status: p.status as Wire['PatientRead']['status'], updated_at: p.updatedAt.toISOString(),
    })),
    ...pageTail(page),
  };
}

/** The records page as JSON text: each record is spliced in as the database wrote it (RecordReadRow), its blanks dropped as it is encoded. */
export function toRecordPageJson(page: Page<RecordReadRow>): SerializedJson<Wire['RecordPage']> {
  return new SerializedJson('{"records":[', page.rows.map((r) => r.json), `],${JSON.stringify(pageTail(page)).slice(1)}`, true);
}

/**
 * v1's `origin` enum may not gain a value (docs/versioning.md): a visit date outside its visit's window
 * is reported as `range`, a date outside the range its visit allows; its message says which.
 */
const wireOrigin = (origin: string) => (origin === 'visit_window' ? 'range' : origin) as Wire['QueryRead']['origin'];

/** A person at the portal and the operator at the command line are both people; the service itself is `system`. */
function wireAuthor(type: string | null, name: string): Wire['QueryAuthor'] {
  const kind = type === 'system' ? 'system' : type === 'api_key' ? 'api_key' : 'person';
  return { kind, name };
}

/** An automatic query is opened by the service; a manual one by its stored opener, a person when it was raised before openers were kept. */
const openerType = (q: QueryReadRow) => (q.origin === 'manual' ? q.openedByType : 'system');

export function toQueryDto(q: QueryReadRow): Wire['QueryRead'] {
  return {
    id: q.id, subject: q.subject, site: q.site, visit: q.visit, instance: q.instance, form: q.form, field: q.field,
    status: q.status as Wire['QueryRead']['status'], origin: wireOrigin(q.origin), message: q.message,
    opened_at: q.openedAt.toISOString(), closed_at: q.closedAt ? q.closedAt.toISOString() : null, updated_at: q.updatedAt.toISOString(),
    opened_by: wireAuthor(openerType(q), q.openedBy),
    answers: q.answers.map((a) => ({ id: a.id, text: a.text, author: wireAuthor(a.authorType, a.author), answered_at: a.answeredAt })),
    closed_by: q.closedBy === null ? null : wireAuthor(q.closedByType, q.closedBy),
    close_reason: q.closeReason,
  };
}

export function toQueryPageDto(page: Page<QueryReadRow>): Wire['QueryPage'] {
  return { queries: page.rows.map(toQueryDto), ...pageTail(page) };
}
