import type { Knex } from 'knex';
import type { FhirImportReadRow, FhirImportReadStore, ReadFilters, ReadScope } from '../domain/stores.js';
import { keyset, visible } from './readPages.js';

/**
 * The read calls' queries on FHIR imports (issue 22.1). Visibility is that of the other read calls,
 * through the import's patient: the key's sites, never a patient who withdrew consent to data use.
 * Items on forms hidden from a blinded key are left out by the domain, which knows the forms' codes.
 */
/** An import changes when it is made and once more when it is decided; both times are the writing transaction's start. */
const UPDATED_AT = 'coalesce(f.decided_at, f.created_at)';

function importsQuery(db: Knex, scope: ReadScope, filters: ReadFilters, withItems: boolean): Knex.QueryBuilder {
  const q = visible(db('fhir_imports as f').join('patients as p', 'p.id', 'f.patient_id').join('sites as s', 's.id', 'p.site_id'), scope, filters, 'p')
    .leftJoin('users as u', 'u.id', 'f.decided_by').leftJoin('api_keys as k', 'k.id', 'f.api_key_id')
    .select('f.id', 'p.subject', 's.number as site', 'f.number', 'f.mode', 'f.status', 'f.counts', 'f.created_at', 'f.rejection_reason',
      // `saved` was concluded by the FHIR call itself, on behalf of the key that sent the file.
      db.raw(`case when f.status = 'saved' then f.created_at else f.decided_at end as decided_at`),
      db.raw(`case when f.status = 'saved' then k.name || ' (API)' else u.name end as decided_by`),
      db.raw(`${UPDATED_AT} as updated_at`));
  if (withItems) q.select('f.items');
  if (filters.status !== undefined) q.where('f.status', filters.status);
  return q;
}

function rowToRead(r: Record<string, any>): FhirImportReadRow {
  return {
    id: r.id, subject: r.subject, site: r.site, number: r.number, mode: r.mode, status: r.status, counts: r.counts,
    createdAt: r.created_at, updatedAt: r.updated_at, decidedAt: r.decided_at, decidedBy: r.decided_by, rejectionReason: r.rejection_reason,
    items: r.items ?? null,
  };
}

export function fhirImportReadStore(db: Knex): FhirImportReadStore {
  return {
    async page(scope, filters, page, withItems) {
      // `updated_at` is computed, so an incremental load filters on the same expression.
      const q = keyset(importsQuery(db, scope, filters, withItems), 'f.id', page, UPDATED_AT);
      return (await q).map(rowToRead);
    },
    async find(scope, subject, number) {
      const row = await importsQuery(db, scope, { subject }, true).where('f.number', number).first();
      return row && rowToRead(row);
    },
  };
}
