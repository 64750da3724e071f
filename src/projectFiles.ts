import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The path of a file that ships beside the code (`spec/openapi.yaml`, `studies/design.schema.json`),
 * found by walking up from this module: it runs from `src/` under tsx and from `dist/src/` once
 * compiled, and such files are not copied into `dist/`.
 */
export function projectFile(relativePath: string): string {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    const candidate = join(dir, relativePath);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${relativePath} not found above ${start}`);
  }
}
