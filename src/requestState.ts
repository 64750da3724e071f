import type { Config } from './config.js';
import type { BodyBudget } from './requestBody.js';
import type { Database } from './db/knex.js';
import type { KeyLookup } from './db/keyLookup.js';
import type { ReadAhead } from './db/readAhead.js';
import type { KeyRequest } from './domain/apiKeys/admission.js';
import type { KeyContext } from './domain/apiKeys/keyContext.js';
import type { Study } from './domain/stores.js';
import type { Lang } from './messages/index.js';

/** What the service holds for its whole life: built once at start-up by the composition root. */
export interface Services {
  config: Config;
  db: Database;
  /** The security step's key look-ups and request counts, gathered into batches per process. */
  keyLookup: KeyLookup;
  /** The bytes of request bodies held at once, across all requests (src/requestBody.ts). */
  bodyBudget: BodyBudget;
  /** The read calls' next pages, read while the client takes in the current one. */
  readAhead: ReadAhead;
  /** The contract as written in spec/openapi.yaml, served unchanged at /api/v1/openapi.json. */
  spec: Record<string, unknown>;
}

/** What one request carries through the middleware and handlers (`ctx.state`). */
export interface RequestState {
  services: Services;
  requestId: string;
  lang: Lang;
  /** The request's key authenticated and the request counted (requestKey.ts); a rejection is the key's 401 refusal. */
  keyRequest?: Promise<KeyRequest>;
  /** The authenticated API key, once the security handler has accepted it. */
  key?: KeyContext;
  /** The key's study, once access to it was checked. */
  study?: Study;
}
