/**
 * What `make run` prints after `sdx demo --json`: the demo study, its API key (shown once), the people and
 * where to start. Reads the command's one JSON object on standard input, so the key never lands in a file.
 */
import { text } from 'node:stream/consumers';
import { pathToFileURL } from 'node:url';

export interface DemoSummary {
  study: string;
  base_url: string;
  key: string;
  people: { email: string; password: string }[];
}

export function demoInstructions(d: DemoSummary): string {
  return [
    '',
    `Demo study ${d.study} is loaded.`,
    `  API reference: ${d.base_url}/api/v1/docs (examples: examples/README.md)`,
    `  Demo API key (shown once): ${d.key}`,
    `  Try: curl -H "Authorization: Bearer ${d.key}" ${d.base_url}/api/v1/studies/${d.study}`,
    `  People: ${d.people.map((p) => `${p.email} / ${p.password}`).join(', ')}`,
    `  Staff portal: sign in as one of them at ${d.base_url}/portal/sign-in`,
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const demo = JSON.parse(await text(process.stdin)) as DemoSummary | { error: { message: string } };
  if ('error' in demo) {
    process.stderr.write(`error: ${demo.error.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${demoInstructions(demo)}\n`);
}
