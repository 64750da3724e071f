import type { Knex } from 'knex';
import type { ApiKeyRow, ApiKeyStore, ApiKeyWithMaker, StudyRow } from '../domain/stores.js';
import { RATE_WINDOW_MS, type RateWindow } from '../domain/apiKeys/rateWindow.js';
import type { StudyDesign } from '../domain/studyDesign/types.js';
import { countRequestSql } from './rateLimits.js';
import { rowToStudy, STRUCTURE_SQL, structureOf } from './studies.js';

export const TABLE = 'api_keys';

/**
 * A key with its sites and the facts about its maker that decide, on every request, whether it
 * still works: one query, no cache, so a revocation or a demotion takes effect at the next request.
 * Written out as SQL rather than built with Knex, because it runs on every request and building it
 * cost more CPU than PostgreSQL spends running it. The key's columns are named rather than `k.*`, so
 * the prepared form of the lookup (findKeyForRequest) survives a migration that adds a column.
 */
const KEY_COLUMNS = `k.id, k.study_id, k.name, k.fingerprint, k.hint, k.can_read, k.can_write, k.can_enrol, k.term_days,
  k.expires_at, k.created_by, k.created_at, k.revoked_at, k.last_used_at, k.request_count, k.rows_read,
  st.code as study_code, u.name as maker_name,
  m.id is not null as maker_is_manager, coalesce(m.can_export, false) as maker_can_export, coalesce(m.unblinded, false) as maker_unblinded,
  (select coalesce(array_agg(ks.site_id order by ks.site_id), '{}') from api_key_sites ks where ks.api_key_id = k.id) as site_ids,
  case when m.id is null then '{}'::int[]
    when m.all_sites then (select coalesce(array_agg(s.id order by s.id), '{}') from sites s where s.study_id = k.study_id)
    else (select coalesce(array_agg(rs.site_id order by rs.site_id), '{}') from study_role_sites rs where rs.study_role_id = m.id) end as maker_site_ids`;
const KEY_TABLES = `from ${TABLE} k
  join studies st on st.id = k.study_id
  join users u on u.id = k.created_by
  left join study_roles m on m.study_id = k.study_id and m.user_id = k.created_by and m.role = 'manager'`;

async function selectWithMaker(db: Knex, condition: string, bindings: readonly Knex.RawBinding[]): Promise<KeyRecord[]> {
  return (await db.raw(`select ${KEY_COLUMNS} ${KEY_TABLES} where ${condition}`, bindings)).rows;
}

type KeyRecord = Record<string, any>;

function rowToKey(r: KeyRecord): ApiKeyRow {
  return {
    id: r.id, studyId: r.study_id, name: r.name, fingerprint: r.fingerprint, hint: r.hint, canRead: r.can_read,
    canWrite: r.can_write, canEnrol: r.can_enrol, termDays: r.term_days, expiresAt: r.expires_at, createdBy: r.created_by,
    createdAt: r.created_at, revokedAt: r.revoked_at, lastUsedAt: r.last_used_at, requestCount: r.request_count,
    rowsRead: r.rows_read, siteIds: r.site_ids ?? [],
  };
}

function rowToKeyWithMaker(r: KeyRecord): ApiKeyWithMaker {
  return {
    ...rowToKey(r), studyCode: r.study_code, makerName: r.maker_name, makerIsManager: r.maker_is_manager,
    makerCanExport: r.maker_can_export, makerUnblinded: r.maker_unblinded, makerSiteIds: r.maker_site_ids,
  };
}

/** Designs by design hash, parsed once per process: a stored design never changes under its hash. */
const designs = new Map<string, StudyDesign>();
/** Enough for every study a deployment serves; past it, designs are simply read each time. */
const DESIGNS_KEPT = 100;

/** Frozen, because one parsed design now serves every request of its study: changing it would be a bug, and fails loudly. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/**
 * What the security step of an API request needs, in one statement: the key by fingerprint, its study's
 * row (a request can only ever reach its key's own study: checkKeyAccess), and the request counted
 * against the key's rate window and request counter (countRequestSql) when the key works. One round
 * trip, where a key query and a counting statement took two: on this machine each round trip costs a
 * request more than the SQL it runs (bench/README.md).
 *
 * Requests refused with 401 are never counted, so the counting runs only for a key in the state
 * `active`: `working` below is keyStateOf (src/domain/apiKeys/keyState.ts) written in SQL, at the same
 * instant `at` as the domain checks (to the millisecond, as a JavaScript Date holds the expiry). The domain stays the authority; the security step refuses to go on
 * if the two ever disagree, and test/integration/requestPath.test.ts holds them together state by state.
 *
 * The study's design comes back only when this process has not parsed that design yet. It runs on
 * every API request, so it is a prepared statement: PostgreSQL plans it once per connection (planning
 * took longer than running it).
 */
export async function findKeyForRequest(db: Knex, fingerprint: Buffer, at: Date): Promise<KeyForRequest | undefined> {
  const { rows } = await db.raw(
    `with found as (
       select ${KEY_COLUMNS}, to_jsonb(st) - 'design' as study_row, ${STRUCTURE_SQL} as study_structure,
         case when st.design_hash = any(cast(:known as text[])) then null else st.design end as study_design
       ${KEY_TABLES} where k.fingerprint = :fingerprint
     ),
     working as (
       select id from found where revoked_at is null and date_trunc('milliseconds', expires_at) > :at and maker_is_manager and (not can_read or maker_can_export)
     ),
     ${countRequestSql('working')}
     select found.*, win.points as window_points, win.expire as window_expire from found left join win on true`,
    { known: [...designs.keys()], fingerprint, at, now: at.getTime(), expire: at.getTime() + RATE_WINDOW_MS },
  ).options({ name: 'sdx_key_for_request' });
  const row = rows[0] as KeyRecord | undefined;
  if (!row) return undefined;
  const hash: string = row.study_row.design_hash;
  let design = designs.get(hash);
  if (!design) {
    design = row.study_design as StudyDesign;
    if (designs.size < DESIGNS_KEPT) designs.set(hash, deepFreeze(design));
  }
  return {
    key: rowToKeyWithMaker(row),
    // to_jsonb gives the study's own column names, so rowToStudy reads it as it reads a `studies` row.
    study: { ...rowToStudy({ ...row.study_row, design }), structure: structureOf(row.study_structure) },
    window: row.window_points === null ? undefined : { points: row.window_points, expire: Number(row.window_expire) },
  };
}

export interface KeyForRequest {
  key: ApiKeyWithMaker;
  study: StudyRow;
  /** The key's rate window with this request counted; absent when the key does not work (the request is refused with 401). */
  window: RateWindow | undefined;
}

export function apiKeyStore(db: Knex): ApiKeyStore {
  return {
    async insert(key) {
      const [row] = await db(TABLE).insert({
        study_id: key.studyId, name: key.name, fingerprint: key.fingerprint, hint: key.hint, can_read: key.canRead,
        can_write: key.canWrite, can_enrol: key.canEnrol, term_days: key.termDays, expires_at: key.expiresAt,
        created_by: key.createdBy,
      }).returning('*');
      await db('api_key_sites').insert(key.siteIds.map((siteId) => ({ api_key_id: row.id, site_id: siteId })));
      return rowToKey({ ...row, site_ids: key.siteIds });
    },
    async findByFingerprint(fingerprint) {
      const [row] = await selectWithMaker(db, 'k.fingerprint = ?', [fingerprint]);
      return row ? rowToKeyWithMaker(row) : undefined;
    },
    async findById(studyId, id) {
      const [row] = await selectWithMaker(db, 'k.study_id = ? and k.id = ?', [studyId, id]);
      return row ? rowToKeyWithMaker(row) : undefined;
    },
    async list(studyId) {
      return (await selectWithMaker(db, 'k.study_id = ? order by k.id', [studyId])).map(rowToKeyWithMaker);
    },
    async revoke(id, byUserId) {
      await db(TABLE).where({ id }).whereNull('revoked_at').update({ revoked_at: db.fn.now(), revoked_by: byUserId });
    },
  };
}
