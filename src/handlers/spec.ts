import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import { projectFile } from '../projectFiles.js';

/** The contract, parsed from spec/openapi.yaml: the single source of truth for routing, validation and docs. */
export function loadSpec(): Record<string, unknown> {
  return yaml.load(readFileSync(projectFile('spec/openapi.yaml'), 'utf8')) as Record<string, unknown>;
}
