import type { KeyContext } from '../apiKeys/keyContext.js';
import type { DesignIds, ReadScope, Site, Study, StudyStore } from '../stores.js';
import { designForKey } from '../studies/designForKey.js';
import type { StudyDesign } from '../studyDesign/types.js';

/** What an export may show a key: its view of the design, and the scope every query of the export runs in. */
export interface ExportScope {
  design: StudyDesign;
  scope: ReadScope;
  ids: DesignIds;
  sites: Site[];
}

/**
 * The same rules as the records read (interface description, "Read calls rules" 2): the key's sites,
 * no unblinded-team form for a blinded maker; withdrawn patients are left out by the queries.
 */
export async function exportScopeOf(studies: StudyStore, key: KeyContext, study: Study): Promise<ExportScope> {
  const [ids, sites] = await Promise.all([studies.designIds(study), studies.sites(study)]);
  const design = designForKey(study, sites, key);
  const shown = new Set(design.forms.map((f) => f.code));
  const hiddenFormIds = study.design.forms.filter((f) => !shown.has(f.code)).map((f) => ids.forms.get(f.code)).filter((id): id is number => id !== undefined);
  return { design, ids, sites: sites.filter((s) => key.siteIds.includes(s.id)), scope: { studyId: study.id, siteIds: key.siteIds, hiddenFormIds } };
}

/** The database ids of the forms given by code. */
export function formIdsOf(ids: DesignIds, codes: string[]): number[] {
  return codes.map((code) => ids.forms.get(code)).filter((id): id is number => id !== undefined);
}
