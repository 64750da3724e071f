/**
 * The same JSON data written one way: object members sorted by name at every depth, arrays in their order.
 * `JSON.stringify(canonical(x))` is the text that the request fingerprints and the FHIR content hash digest.
 *
 * Written as loops rather than `Object.fromEntries(…map…)`: the FHIR content hash runs it over every
 * resource of a file of several megabytes on the import's path, where the intermediate arrays cost as
 * much as the copy (bench/README.md, "FHIR content hash").
 */
export function canonical(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = canonical(value[i]);
    return out;
  }
  const object = value as Record<string, unknown>;
  const names = Object.keys(object);
  if (names.length > 1) names.sort();
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const member = canonical(object[name]);
    // A member named __proto__ (JSON.parse makes it an own member) must stay a member, not become the prototype.
    if (name === '__proto__') Object.defineProperty(out, name, { value: member, enumerable: true, writable: true, configurable: true });
    else out[name] = member;
  }
  return out;
}
