/**
 * Writes `generated/studyDesign.d.ts`, the types of a study design as `parseStudyDesign` returns it, from
 * the file format's JSON Schema (`studies/design.schema.json`) with json-schema-to-typescript, so the
 * shape is written once, in the schema. A member with a default is required in these types: the parse
 * fills defaults (Ajv's useDefaults) before anything reads the design.
 *
 * `npx tsx scripts/generateDesignTypes.ts` writes the file; with `--check` it fails when the file differs
 * (make gen-check, as for the contract's types).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { compile, type JSONSchema } from 'json-schema-to-typescript';

const SCHEMA = 'studies/design.schema.json';
const OUTPUT = 'generated/studyDesign.d.ts';

/** The schema with every member that has a default made required, as the parsed design has it. */
function withDefaultsRequired(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withDefaultsRequired);
  if (node === null || typeof node !== 'object') return node;
  const copy = Object.fromEntries(Object.entries(node).map(([name, value]) => [name, withDefaultsRequired(value)])) as Record<string, unknown>;
  const properties = copy.properties as Record<string, { default?: unknown }> | undefined;
  if (properties) {
    const defaulted = Object.keys(properties).filter((name) => properties[name]?.default !== undefined);
    copy.required = [...new Set([...((copy.required as string[] | undefined) ?? []), ...defaulted])];
  }
  return copy;
}

const schema = withDefaultsRequired(JSON.parse(readFileSync(SCHEMA, 'utf8'))) as JSONSchema;
const text = await compile(schema, 'StudyDesign', {
  additionalProperties: false,
  unknownAny: true,
  ignoreMinAndMaxItems: true,
  bannerComment: `/**\n * Generated from ${SCHEMA} by scripts/generateDesignTypes.ts (make gen). Do not edit by hand.\n * A member with a default is required: the parsed design has it filled in.\n */`,
});

if (process.argv.includes('--check')) {
  let current = '';
  try { current = readFileSync(OUTPUT, 'utf8'); } catch { /* missing: differs */ }
  if (current !== text) {
    console.error(`${OUTPUT} is out of date with ${SCHEMA}: run make gen`);
    process.exit(1);
  }
} else {
  writeFileSync(OUTPUT, text);
}
