// Lint rules that keep the layers apart (STYLE.md, "Rules that keep handlers thin"): the domain knows
// no HTTP and no SQL, the data layer no HTTP, and handlers no SQL. Enforced here, not left to review.
import tseslint from 'typescript-eslint';

const banned = (patterns) => ['error', { patterns }];

export default tseslint.config(
  { ignores: ['dist/**', 'generated/**', 'node_modules/**', 'clients/**/dist/**', 'test-output/**', 'tmp/**', 'test/generatedClients/drivers/**'] },
  // typescript-eslint's recommended rules with type information (issue 20.5): no `any` flowing unchecked,
  // no floating or misused promises, no needless assertions.
  ...tseslint.configs.recommendedTypeChecked.map((config) => ({ ...config, files: ['src/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'] })),
  {
    files: ['src/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': banned([
        { group: ['koa', 'koa-*', '@koa/*', 'openapi-backend', 'knex', 'pg'], message: 'The domain holds rules over data: no HTTP, no SQL.' },
        { group: ['**/db/**', '**/handlers/**', '**/portal/**'], message: 'The domain depends on store interfaces (src/domain/stores.ts), not on their implementations.' },
      ]),
    },
  },
  {
    files: ['src/db/**/*.ts'],
    rules: {
      'no-restricted-imports': banned([
        { group: ['koa', 'koa-*', '@koa/*', 'openapi-backend'], message: 'The data layer knows no HTTP.' },
        { group: ['**/handlers/**', '**/portal/**'], message: 'The data layer does not depend on the HTTP layer.' },
      ]),
    },
  },
  {
    files: ['src/handlers/**/*.ts'],
    rules: {
      'no-restricted-imports': banned([{ group: ['knex', 'pg'], message: 'Handlers call the domain; SQL lives in src/db.' }]),
    },
  },
  {
    files: ['src/portal/**/*.ts'],
    rules: {
      'no-restricted-imports': banned([
        { group: ['knex', 'pg'], message: 'The portal calls the domain; SQL lives in src/db.' },
        { group: ['**/handlers/**'], message: 'The portal and the API share the domain, src/messages and src/errorStatus.ts, not each other\'s code.' },
      ]),
    },
  },
);
