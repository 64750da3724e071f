import type { components } from '../../../generated/openapi.js';
import { importIdOf } from '../../domain/fhir/importId.js';
import type { FhirImportItem } from '../../domain/fhir/fhirImportItem.js';
import type { Page } from '../../domain/reads/readPage.js';
import type { FhirImportReadRow } from '../../domain/stores.js';
import { pageTail } from './readRows.js';

type Wire = components['schemas'];

/** The import's review page on the patient's card, as every FHIR answer gives it. */
export function reviewUrlOf(baseUrl: string, studyCode: string, subject: string, number: number): string {
  return `${baseUrl}/p/${encodeURIComponent(studyCode)}/s/${encodeURIComponent(subject)}/fhir/${number}`;
}

function toSummaryDto(row: FhirImportReadRow, baseUrl: string, studyCode: string): Wire['FhirImportSummary'] {
  return {
    import: importIdOf(studyCode, row.subject, row.number),
    number: row.number,
    subject: row.subject,
    site: row.site,
    status: row.status,
    needs_review: row.status === 'proposed',
    mode: row.mode,
    counts: row.counts,
    review_url: reviewUrlOf(baseUrl, studyCode, row.subject, row.number),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    decided_at: row.decidedAt ? row.decidedAt.toISOString() : null,
    decided_by: row.decidedBy,
    rejection_reason: row.rejectionReason,
  };
}

export function toFhirImportPageDto(page: Page<FhirImportReadRow>, baseUrl: string, studyCode: string): Wire['FhirImportPage'] {
  return { imports: page.rows.map((row) => toSummaryDto(row, baseUrl, studyCode)), ...pageTail(page) };
}

export function toFhirImportDto(row: FhirImportReadRow & { items: FhirImportItem[] }, baseUrl: string, studyCode: string): Wire['FhirImport'] {
  return { ...toSummaryDto(row, baseUrl, studyCode), items: row.items };
}
