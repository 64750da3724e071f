import type { Knex } from 'knex';
import type { FhirImportReadRow, FhirImportReadStore, ReadFilters, ReadScope } from '../domain/stores.js';
import { keyset, visible } from './readPages.js';

/**
 * The read calls' queries on FHIR imports (issue 22.1). Visibility is that of the other read calls,
 * through the import's patient: the key's sites, never a patient who withdrew consent to data use.
 * A page leaves the items out; for a key with hidden forms it recounts each import's items without those
 * forms' in the database (as `countItems` counts), so a page never loads hundreds of items per import.
 * One import comes with its items, and the domain leaves out those the key may not see.
 */
/** An import changes when it is made and once more when it is decided; both times are the writing transaction's start. */
const UPDATED_AT = 'coalesce(f.decided_at, f.created_at)';

/**
 * The counts of an import's items that a reader who may not see some forms is shown, as `countItems` counts
 * them: SQL over the import row `alias`, whose `?` binds the hidden form ids. The API's read calls and the
 * portal's patient card use it alike.
 */
export function visibleCountsSql(alias: string): string {
  return `(select json_build_object('values', count(*) filter (where e.item->>'state' <> 'skipped'),
    'conflicts', count(*) filter (where e.item->>'state' = 'conflict'), 'same', count(*) filter (where e.item->>'state' = 'same'),
    'skipped', count(*) filter (where e.item->>'state' = 'skipped'), 'saved', count(*) filter (where e.item->>'state' = 'saved'))
  from json_array_elements(${alias}.items) as e(item)
  where e.item->>'form' is null or e.item->>'form' not in (select fo.code from forms fo where fo.id = any(?::int[])))`;
}

/** An import as importsQuery reads it; `items` only when asked for. */
interface FhirImportReadRecord extends Pick<FhirImportReadRow, 'id' | 'subject' | 'site' | 'number' | 'mode' | 'status' | 'counts'> {
  created_at: Date; updated_at: Date; decided_at: Date | null; decided_by: string | null; rejection_reason: string | null; items?: FhirImportReadRow['items'];
}

function importsQuery(db: Knex, scope: ReadScope, filters: ReadFilters, withItems: boolean) {
  const q = visible(db('fhir_imports as f').join('patients as p', 'p.id', 'f.patient_id').join('sites as s', 's.id', 'p.site_id'), scope, filters, 'p')
    .leftJoin('users as u', 'u.id', 'f.decided_by').leftJoin('api_keys as k', 'k.id', 'f.api_key_id')
    .select<FhirImportReadRecord[]>('f.id', 'p.subject', 's.number as site', 'f.number', 'f.mode', 'f.status', 'f.created_at', 'f.rejection_reason',
      // `saved` was concluded by the FHIR call itself, on behalf of the key that sent the file.
      db.raw(`case when f.status = 'saved' then f.created_at else f.decided_at end as decided_at`),
      db.raw(`case when f.status = 'saved' then k.name || ' (API)' else u.name end as decided_by`),
      db.raw(`${UPDATED_AT} as updated_at`));
  if (withItems) q.select('f.items', 'f.counts');
  else if (scope.hiddenFormIds.length > 0) q.select(db.raw(`${visibleCountsSql('f')} as counts`, [scope.hiddenFormIds]));
  else q.select('f.counts');
  if (filters.status !== undefined) q.where('f.status', filters.status);
  return q;
}

function rowToRead(r: FhirImportReadRecord): FhirImportReadRow {
  return {
    id: r.id, subject: r.subject, site: r.site, number: r.number, mode: r.mode, status: r.status, counts: r.counts,
    createdAt: r.created_at, updatedAt: r.updated_at, decidedAt: r.decided_at, decidedBy: r.decided_by, rejectionReason: r.rejection_reason,
    items: r.items ?? null,
  };
}

export function fhirImportReadStore(db: Knex): FhirImportReadStore {
  return {
    async page(scope, filters, page) {
      // `updated_at` is computed, so an incremental load filters on the same expression.
      const q = keyset(importsQuery(db, scope, filters, false), 'f.id', page, UPDATED_AT);
      return (await q).map(rowToRead);
    },
    async find(scope, subject, number) {
      const row = await importsQuery(db, scope, { subject }, true).where('f.number', number).first<FhirImportReadRecord | undefined>();
      return row && rowToRead(row);
    },
  };
}
