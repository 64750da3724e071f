import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import type { Document } from 'openapi-backend';
import { projectFile } from '../projectFiles.js';

/** The contract, parsed from spec/openapi.yaml: the single source of truth for routing, validation and docs. */
export function loadSpec(): Record<string, unknown> {
  return yaml.load(readFileSync(projectFile('spec/openapi.yaml'), 'utf8')) as Record<string, unknown>;
}

/**
 * The contract as openapi-backend routes it: a copy without the top-level `webhooks`, which are requests
 * the service sends, not calls it answers, and which openapi-backend 5 refuses (it checks the document
 * against the OpenAPI 3.0 schema, which has no `webhooks`).
 */
export function routedDocument(spec: Record<string, unknown>): Document {
  const routed = structuredClone(spec);
  delete routed.webhooks;
  return routed as Document;
}
