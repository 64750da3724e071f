#!/usr/bin/env node
// The `sdx` command: the compiled command line when built (`make build`), otherwise the TypeScript source through tsx.
import { existsSync } from 'node:fs';

const built = new URL('../dist/scripts/sdx.js', import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../scripts/sdx.ts', import.meta.url).href);
}
