import type { Knex } from 'knex';
import type { ApiKey, ApiKeyStore, ApiKeyWithMaker, Study } from '../domain/stores.js';
import type { FoundKey } from '../domain/apiKeys/admission.js';
import type { KeyStopReason } from '../domain/apiKeys/keyState.js';
import type { StudyDesign } from '../domain/studyDesign/types.js';
import { RATE_WINDOW_MS } from '../domain/apiKeys/rateWindow.js';
import { roleSiteIdsSql } from './people.js';
import { returnedRow } from './returnedRow.js';
import { countsOfRequests, countSql, type CountedKey } from './rateLimits.js';
import { rowToStudy, STRUCTURE_SQL, structureOf, type StructureJson, type StudyRecord } from './studies.js';

const TABLE = 'api_keys';

/**
 * A key with its sites and the facts about its maker that decide, on every request, whether it
 * still works: one query, no cache, so a revocation or a demotion takes effect at the next request.
 * Written out as SQL rather than built with Knex, because it runs on every request and building it
 * cost more CPU than PostgreSQL spends running it. The key's columns are named rather than `k.*`, so
 * the prepared form of the lookup (findKeysForRequests) survives a migration that adds a column.
 */
const KEY_COLUMNS = `k.id, k.study_id, k.name, k.fingerprint, k.hint, k.can_read, k.can_write, k.can_enrol, k.term_days,
  k.expires_at, k.created_by, k.created_at, k.revoked_at, k.stopped_reason, k.last_used_at, k.request_count, k.rows_read,
  st.code as study_code, u.name as maker_name,
  m.id is not null as maker_is_manager, coalesce(m.can_export, false) as maker_can_export, coalesce(m.unblinded, false) as maker_unblinded,
  (select coalesce(array_agg(ks.site_id order by ks.site_id), '{}') from api_key_sites ks where ks.api_key_id = k.id) as site_ids,
  ${roleSiteIdsSql('m')} as maker_site_ids`;
const KEY_TABLES = `from ${TABLE} k
  join studies st on st.id = k.study_id
  join users u on u.id = k.created_by
  left join study_roles m on m.study_id = k.study_id and m.user_id = k.created_by and m.role = 'manager'`;

async function selectWithMaker(db: Knex, condition: string, bindings: readonly Knex.RawBinding[]): Promise<KeyRecord[]> {
  return (await db.raw<{ rows: KeyRecord[] }>(`select ${KEY_COLUMNS} ${KEY_TABLES} where ${condition}`, bindings)).rows;
}

/**
 * A key's study (`st`) as a look-up brings it: its row without the design, its structure, and its design only
 * when this process has not parsed that design yet (`:known`, the design hashes it holds).
 */
const STUDY_COLUMNS = `to_jsonb(st) - 'design' as study_row, ${STRUCTURE_SQL} as study_structure,
  case when st.design_hash = any(cast(:known as text[])) then null else st.design end as study_design`;

/** A row of `api_keys` as the table holds it. */
interface KeyTableRow {
  id: number; study_id: number; name: string; fingerprint: Buffer; hint: string; can_read: boolean; can_write: boolean; can_enrol: boolean;
  term_days: number; expires_at: Date; created_by: number; created_at: Date; revoked_at: Date | null; stopped_reason: KeyStopReason | null;
  last_used_at: Date | null;
  request_count: number; rows_read: number;
}

/** A key as KEY_COLUMNS reads it: its row, its sites and the facts about its maker. */
interface KeyRecord extends KeyTableRow {
  site_ids: number[] | null; study_code: string; maker_name: string; maker_is_manager: boolean; maker_can_export: boolean;
  maker_unblinded: boolean; maker_site_ids: number[];
}

/** A key with its study's row, structure and (when this process has not parsed it yet) design. */
interface KeyWithStudyRecord extends KeyRecord {
  study_row: StudyRecord | null; study_structure: StructureJson; study_design: StudyDesign | null;
}

/** A key of a batch of requests, with its study (on the first of the study's keys) and its counts. */
interface KeyForRequestRecord extends KeyWithStudyRecord {
  minute_admitted: number; minute_held: number; minute_oldest: CountedKey['minute']['oldest']; used_before: string | null; used_at: CountedKey['usedAt'];
}

function rowToKey(r: Pick<KeyRecord, keyof KeyTableRow | 'site_ids'>): ApiKey {
  return {
    id: r.id, studyId: r.study_id, name: r.name, fingerprint: r.fingerprint, hint: r.hint, canRead: r.can_read,
    canWrite: r.can_write, canEnrol: r.can_enrol, termDays: r.term_days, expiresAt: r.expires_at, createdBy: r.created_by,
    createdAt: r.created_at, revokedAt: r.revoked_at, stoppedReason: r.stopped_reason, lastUsedAt: r.last_used_at, requestCount: r.request_count,
    rowsRead: r.rows_read, siteIds: r.site_ids ?? [],
  };
}

/**
 * Object.assign rather than a spread followed by members: in Node 20 the spread costs V8 time per member
 * added and leaves an object slower to read, and this runs for every key row of every request; side by
 * side it was worth well over 5 % of the design call (bench/README.md).
 */
function rowToKeyWithMaker(r: KeyRecord): ApiKeyWithMaker {
  return Object.assign(rowToKey(r), {
    studyCode: r.study_code, makerName: r.maker_name, makerIsManager: r.maker_is_manager,
    makerCanExport: r.maker_can_export, makerUnblinded: r.maker_unblinded, makerSiteIds: r.maker_site_ids,
  });
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

/** A request to find the key of and count: its key's fingerprint, and the instant it came. */
export interface KeyRequestAt {
  fingerprint: Buffer;
  at: Date;
}

/**
 * The keys of a batch of API requests by fingerprint (src/db/keyLookup.ts gathers them), each with its
 * study row (a request can only ever reach its key's own study, admissionOf), and each request counted
 * with `limit` a minute (countSql), at the batch's latest instant, whatever its key's state. On this
 * machine each round trip costs a request more than the SQL it runs (bench/README.md), and under load one
 * statement serves the many requests that arrived while the previous one ran. Whether a key works is not
 * decided here but by the domain (authenticateRequest), from the facts this returns; it takes back the
 * count of a request it refuses (takeBackCounts).
 *
 * A study's design comes back only when this process has not parsed that design yet. The statement is
 * prepared: PostgreSQL plans it once per connection (planning took longer than running it).
 */
export async function findKeysForRequests(db: Knex, requests: readonly KeyRequestAt[], limit: number): Promise<(FoundKey | undefined)[]> {
  const now = Math.max(...requests.map((r) => r.at.getTime()));
  const fingerprints = requests.map((r) => r.fingerprint);
  const { rows } = await db.raw<{ rows: KeyForRequestRecord[] }>(
    `with found as (select ${KEY_COLUMNS} ${KEY_TABLES} where k.fingerprint = any(cast(:fingerprints as bytea[]))),
     key_studies as (
       select st.id as study_id, (select min(f.id) from found f where f.study_id = st.id) as first_key,
         ${STUDY_COLUMNS}
       from studies st where st.id in (select study_id from found)
     ),
     asked as (
       select f.id, count(*)::int as n from unnest(cast(:fingerprints as bytea[])) as r(fingerprint) join found f on f.fingerprint = r.fingerprint group by f.id
     ),
     ${countSql('asked')}
     select found.*, s.study_row, s.study_structure, s.study_design,
       win.admitted as minute_admitted, win.held as minute_held, win.oldest as minute_oldest, locked.used_before, counted.used_at
     from found left join key_studies s on s.first_key = found.id
       join locked on locked.id = found.id join win on win.key = 'key:' || found.id join counted on counted.id = found.id`,
    { fingerprints, known: [...designs.keys()], now, window: RATE_WINDOW_MS, limit },
  ).options({ name: 'sdx_keys_for_requests' });
  // A study's row and structure come once, with the first of its keys in the batch.
  const studies = new Map<number, Study>();
  for (const row of rows) if (row.study_row) studies.set(row.study_id, studyOfKeyRow(row, row.study_row));
  const keys = new Map<string, { key: ApiKeyWithMaker; study: Study; counted: CountedKey }>();
  for (const row of rows) {
    const counted = {
      id: row.id, usedBefore: row.used_before, usedAt: row.used_at,
      minute: { key: `key:${row.id}`, admitted: row.minute_admitted, held: row.minute_held, oldest: row.minute_oldest },
    };
    keys.set(row.fingerprint.toString('hex'), { key: rowToKeyWithMaker(row), study: studies.get(row.study_id)!, counted });
  }
  const found = fingerprints.map((fingerprint) => keys.get(fingerprint.toString('hex')));
  const counts = countsOfRequests(found.map((f) => f?.counted), now);
  return found.map((f, i) => f && { key: f.key, study: f.study, ...counts[i]! });
}

/**
 * The keys of a batch of requests whose bodies have arrived, by fingerprint, each with its study as it is
 * now, counting nothing (those requests were counted when their headers came, findKeysForRequests): what
 * such a request is decided on again (recheckRequest). A study's design comes back only when this process
 * has not parsed that design yet. The statement is prepared, as the one of findKeysForRequests.
 */
export async function findKeysWithStudies(db: Knex, fingerprints: readonly Buffer[]): Promise<(Pick<FoundKey, 'key' | 'study'> | undefined)[]> {
  const { rows } = await db.raw<{ rows: KeyWithStudyRecord[] }>(
    `select ${KEY_COLUMNS}, ${STUDY_COLUMNS} ${KEY_TABLES} where k.fingerprint = any(cast(:fingerprints as bytea[]))`,
    { fingerprints: [...fingerprints], known: [...designs.keys()] },
  ).options({ name: 'sdx_keys_after_bodies' });
  const keys = new Map(rows.map((row) => [row.fingerprint.toString('hex'), { key: rowToKeyWithMaker(row), study: studyOfKeyRow(row, row.study_row!) }]));
  return fingerprints.map((fingerprint) => keys.get(fingerprint.toString('hex')));
}

/** The study row that came with a key, its design parsed once per process and design hash. */
function studyOfKeyRow(row: KeyWithStudyRecord, studyRow: StudyRecord): Study {
  const hash = studyRow.design_hash;
  let design = designs.get(hash);
  if (!design) {
    // The statement sends the design whenever this process does not hold its hash.
    design = row.study_design!;
    if (designs.size < DESIGNS_KEPT) designs.set(hash, deepFreeze(design));
  }
  // to_jsonb gives the study's own column names, so rowToStudy reads it as it reads a `studies` row.
  return Object.assign(rowToStudy(studyRow), { design, structure: structureOf(row.study_structure) });
}

export function apiKeyStore(db: Knex): ApiKeyStore {
  return {
    async insert(key) {
      const row = returnedRow(await db(TABLE).insert({
        study_id: key.studyId, name: key.name, fingerprint: key.fingerprint, hint: key.hint, can_read: key.canRead,
        can_write: key.canWrite, can_enrol: key.canEnrol, term_days: key.termDays, expires_at: key.expiresAt,
        created_by: key.createdBy,
      }).returning<KeyTableRow[]>('*'));
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
    async stop(id, reason) {
      return (await db(TABLE).where({ id }).whereNull('stopped_at').whereNull('revoked_at').update({ stopped_at: db.fn.now(), stopped_reason: reason })) > 0;
    },
  };
}
