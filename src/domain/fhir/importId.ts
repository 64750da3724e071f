/**
 * The identifier of a FHIR import that the API returns in `import` and takes back in `getFhirImport`:
 * `<study code>-<subject>-<number>`. A subject may hold `-` (`01-001`), so the number is what follows the
 * last one; the study is the key's own, so its code is a fixed prefix.
 */
export function importIdOf(studyCode: string, subject: string, number: number): string {
  return `${studyCode}-${subject}-${number}`;
}

/** The patient and import number an identifier names, or null when it cannot be one of the study's imports. */
export function importRefOf(studyCode: string, id: string): { subject: string; number: number } | null {
  const prefix = `${studyCode}-`;
  const match = id.startsWith(prefix) ? /^(.+)-([1-9][0-9]{0,8})$/.exec(id.slice(prefix.length)) : null;
  // Both groups take part in every match: the fallback is for the type checker.
  return match ? { subject: match[1] ?? '', number: Number(match[2]) } : null;
}
