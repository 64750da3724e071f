/**
 * The study design file format's JSON Schema (`studies/design.schema.json`) and its compiled
 * validator, each built once per process.
 */
import { readFileSync } from 'node:fs';
import Ajv2020Module, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { projectFile } from '../../projectFiles.js';

// Both packages are CommonJS with `exports.default`; under NodeNext the default import is the module
// object for the type checker, while at run time it is also the class/function itself (which carries
// `.default`), so `.default` is right in both worlds.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

/** Where the design file format's schema lives: beside the code, not copied into `dist/`. */
export function designSchemaPath(): string {
  return projectFile('studies/design.schema.json');
}

let schema: Record<string, unknown> | undefined;
let validator: ValidateFunction | undefined;

/** The parsed JSON Schema of a study design file (read once). */
export function designSchema(): Record<string, unknown> {
  schema ??= JSON.parse(readFileSync(designSchemaPath(), 'utf8')) as Record<string, unknown>;
  return schema;
}

/**
 * The compiled validator (compiled once). It fills the schema's defaults into the data it validates
 * (`useDefaults`), collects every error rather than the first (`allErrors`), and keeps each error's
 * parent schema (`verbose`) so messages can list the allowed properties.
 */
export function designValidator(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv2020({ allErrors: true, useDefaults: true, verbose: true, allowUnionTypes: true });
    addFormats(ajv, ['uri']);
    validator = ajv.compile(designSchema());
  }
  return validator;
}
