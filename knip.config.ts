// knip (issue 20.5): unused files, exports and dependencies, as part of `make lint`.
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  entry: [
    'src/server.ts',
    // Loaded by name by the migrator (src/db/migrator.ts), never imported.
    'src/db/migrations/*.ts',
    // Served to the browser as a file (src/portal/static.ts).
    'src/portal/static/portal.js',
    'scripts/*.{ts,mjs}',
    'bench/*.{ts,mjs}',
    'examples/typescript/*.ts',
    'clients/typescript/src/index.ts',
  ],
  project: ['src/**/*.{ts,js}', 'scripts/**/*.{ts,mjs}', 'bin/**/*.js', 'bench/**/*.{ts,mjs}', 'test/**/*.ts', 'examples/**/*.ts', 'clients/typescript/src/**/*.ts'],
  // Made by the test of the generated clients, beside the clients it generates; the typed client's schema is generated (make gen).
  ignore: ['test/generatedClients/drivers/**', 'clients/typescript/src/schema.ts'],
  mocha: { config: ['test/.mocharc.*.json'] },
  ignoreDependencies: [
    // Its files are read from node_modules and served by the API reference page (src/handlers/docs.ts).
    'swagger-ui-dist',
    // Run through npx by the Makefile (gen, gen-check, lint), which knip does not read.
    'openapi-typescript',
    '@redocly/cli',
    // Command lines the tests start as processes: the contract proxy, the breaking-change check and the
    // third-party client generators (test/helpers/contractProxy.ts, test/unit/specCompatibility.test.ts,
    // test/api/generatedClients.test.ts).
    '@stoplight/prism-cli',
    '@useoptic/optic',
    '@hey-api/openapi-ts',
    'openapi-typescript-codegen',
    'orval',
    'swagger-typescript-api',
  ],
  // make runs the scripts of package.json; xmllint is Debian's (Makefile `xmllint`), used by the ODM test.
  ignoreBinaries: ['make', 'xmllint'],
};

export default config;
