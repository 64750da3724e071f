import type { ApiKeyStore, StudyStore } from '../stores.js';
import { requireStudy } from '../studies/requireStudy.js';
import { keyStateOf } from './keyState.js';

export interface ApiKeySummary {
  id: number;
  name: string;
  hint: string;
  state: 'active' | 'revoked' | 'expired' | 'stopped';
  why: string | null;
  rights: ('read' | 'write' | 'enrol')[];
  sites: string[];
  termDays: number;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  requestCount: number;
  rowsRead: number;
}

/** The keys table of a study: each key with its state (and why it stopped), rights, sites and usage. */
export async function listApiKeys(stores: { studies: StudyStore; apiKeys: ApiKeyStore }, studyCode: string, now = new Date()): Promise<ApiKeySummary[]> {
  const study = await requireStudy(stores.studies, studyCode);
  const siteNumber = new Map((await stores.studies.sites(study)).map((s) => [s.id, s.number]));
  return (await stores.apiKeys.list(study.id)).map((key) => {
    const state = keyStateOf(key, now);
    return {
      id: key.id,
      name: key.name,
      hint: key.hint,
      state: state.state,
      why: state.state === 'stopped' ? state.why : null,
      rights: [...(key.canRead ? ['read' as const] : []), ...(key.canWrite ? ['write' as const] : []), ...(key.canEnrol ? ['enrol' as const] : [])],
      sites: key.siteIds.map((id) => siteNumber.get(id) ?? String(id)),
      termDays: key.termDays,
      createdAt: key.createdAt,
      createdBy: key.makerName,
      expiresAt: key.expiresAt,
      revokedAt: key.revokedAt,
      lastUsedAt: key.lastUsedAt,
      requestCount: key.requestCount,
      rowsRead: key.rowsRead,
    };
  });
}
