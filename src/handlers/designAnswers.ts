import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { KeyContext } from '../domain/apiKeys/keyContext.js';
import type { Site, Study } from '../domain/stores.js';
import { designForKey } from '../domain/studies/designForKey.js';
import { toStudyDesignDto } from './presenters/studyDesign.js';
import { SerializedJson } from './serializedJson.js';

export interface DesignAnswer {
  body: SerializedJson<ReturnType<typeof toStudyDesignDto>>;
  etag: string;
}

/** Enough for every view of every study a deployment serves; past it, the views least asked for are dropped. */
const answers = new LRUCache<string, DesignAnswer>({ max: 1000 });

/**
 * Everything the design answer is made of: the study's own row (design by hash), its sites, and what of
 * them the key sees (its sites, and whether its maker is unblinded). The same inputs give the same text.
 */
function viewOf(study: Study, sites: Site[], key: KeyContext): string {
  // The design is known by its hash, the structure by the sites given.
  const row: Partial<Study> = { ...study };
  delete row.design;
  delete row.structure;
  return JSON.stringify([row, sites, key.siteIds, key.makerUnblinded]);
}

/**
 * The design call's answer as the key may see it, with its ETag: serialised and hashed once per view,
 * not per request. Building and hashing the 8 KB text was a fifth of the design call's CPU under load,
 * and a polling integration asks for the same view again and again.
 */
export function designAnswer(study: Study, sites: Site[], key: KeyContext): DesignAnswer {
  const view = viewOf(study, sites, key);
  let answer = answers.get(view);
  if (!answer) {
    const body = new SerializedJson<ReturnType<typeof toStudyDesignDto>>(JSON.stringify(toStudyDesignDto(study, designForKey(study, sites, key))));
    answer = { body, etag: `"${createHash('sha256').update(body.text).digest('base64url').slice(0, 32)}"` };
    answers.set(view, answer);
  }
  return answer;
}
