import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** What a driver prints (test/generatedClients/drivers/scenario.ts), with the generated code's calls of the reference page. */
interface Outcome {
  study: string;
  enrolled: string;
  subjects: string[];
  pages: number;
  refusal: { status: number; code: string };
  fhir: string;
  docsCalls: string[];
}

/**
 * Issue 22.7: the contract turns into a clean client with each popular generator. For each, a client is
 * generated from the document the service serves (`getOpenApi`), compiled with a small driver under
 * `tsc --strict`, and the driver walks a running service: the design, an enrolment, a paged read that
 * follows `next`, a 422 read through its typed problem body, and a FHIR JSON import (orval once sent it
 * without a Content-Type). The reference page's operations (tag `docs`) are filtered out where a
 * generator can filter; the generators are pinned in devDependencies, at versions that run on Node 20.
 * Output goes to test-output/generated-clients/, never into git.
 */

const OUT = resolve('test-output/generated-clients');
const DRIVERS = 'test/generatedClients/drivers';
const bin = (pkg: string, file: string) => resolve('node_modules', pkg, file);

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((done, fail) => {
    execFile(process.execPath, args, { env: { ...process.env, NO_COLOR: '1', ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 }, (error, stdout, stderr) => {
      if (error) fail(new Error(`${args.slice(0, 3).join(' ')} failed:\n${stdout}\n${stderr}`));
      else done(stdout);
    });
  });
}

/** Each generator's own configuration, as a user would write it; `docs` is the reference page's tag. */
const GENERATORS: Record<string, (document: string, client: string, folder: string, service: string) => Promise<unknown>> = {
  codegen: (document, client) => run([bin('openapi-typescript-codegen', 'bin/index.js'), '--input', document, '--output', client, '--client', 'fetch', '--useOptions']),
  heyapi: (document, client, folder) => {
    // `orphans` keeps the shared parameters that path-level `$ref`s use, which the tag filter would drop.
    writeFileSync(join(folder, 'openapi-ts.config.mjs'), `export default ${JSON.stringify({
      input: document, output: client, plugins: ['@hey-api/client-fetch'], logs: { level: 'silent' },
      parser: { filters: { tags: { exclude: ['docs'] }, orphans: true } },
    })};\n`);
    return run([bin('@hey-api/openapi-ts', 'bin/run.js'), '-f', join(folder, 'openapi-ts.config.mjs')]);
  },
  orval: (document, client, folder, service) => {
    writeFileSync(join(folder, 'orval.config.cjs'), `module.exports = ${JSON.stringify({
      sdx: { input: { target: document, filters: { mode: 'exclude', tags: ['docs'] } }, output: { target: join(client, 'api.ts'), client: 'fetch', baseUrl: service } },
    })};\n`);
    return run([bin('orval', 'dist/bin/orval.js'), '--config', join(folder, 'orval.config.cjs')]);
  },
  sta: (document, client, folder) => {
    // It has no tag filter of its own: a route hook drops the page's routes.
    writeFileSync(join(folder, 'sta.config.mjs'), "export default { hooks: { onCreateRoute: (route) => (route.raw.tags?.includes('docs') ? false : route) } };\n");
    return run([bin('swagger-typescript-api', 'dist/cli.mjs'), 'generate', '-p', document, '-o', client, '-n', 'api.ts', `--custom-config=${join(folder, 'sta.config.mjs')}`]);
  },
};

const TSCONFIG = {
  compilerOptions: {
    strict: true, noEmit: true, target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: ['node'],
  },
  include: ['*.ts', 'client/**/*.ts'],
};

describe('generated clients (issue 22.7): four generators, tsc --strict, the walk-through against the service', function () {
  // About 20 s on a quiet machine; the bound is for a loaded one (the four generators and tsc run side by side).
  this.timeout(300_000);
  const { app, world } = useStudyWorld();
  const fhirSubjects: Record<string, string> = {};
  const outcomes: Record<string, Promise<Outcome>> = {};

  before(async () => {
    for (const name of Object.keys(GENERATORS)) {
      // The FHIR example is a heart rate of 2026-03-09: a consenting patient enrolled that day takes it.
      const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-09' } });
      fhirSubjects[name] = res.body.subject;
      await giveConsent(app.db.knex, world.code, res.body.subject, '2020-01-01');
    }
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const served = await fetch(`${app.baseUrl}/api/v1/openapi.json`);
    const document = join(OUT, 'openapi.json');
    writeFileSync(document, await served.text());
    const env = { SDX_URL: app.baseUrl, SDX_KEY: world.key, SDX_STUDY: world.code };
    // The four run side by side; each promise is the driver's report, or the step that failed.
    for (const [name, generate] of Object.entries(GENERATORS)) {
      const folder = join(OUT, name);
      mkdirSync(folder, { recursive: true });
      outcomes[name] = (async () => {
        await generate(document, join(folder, 'client'), folder, app.baseUrl);
        copyFileSync(join(DRIVERS, `${name}.ts`), join(folder, 'driver.ts'));
        copyFileSync(join(DRIVERS, 'scenario.ts'), join(folder, 'scenario.ts'));
        writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify(TSCONFIG));
        await run([bin('typescript', 'bin/tsc'), '-p', join(folder, 'tsconfig.json')]);
        const surface = readdirSync(join(folder, 'client'), { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('.ts')).map((file) => readFileSync(join(folder, 'client', file), 'utf8')).join('\n');
        const outcome = JSON.parse(await run(['--import', 'tsx', join(folder, 'driver.ts')], { ...env, SDX_FHIR_SUBJECT: fhirSubjects[name] })) as Omit<Outcome, 'docsCalls'>;
        // The reference page's calls are left out: no function for them in the generated code.
        return { ...outcome, docsCalls: surface.match(/\bgetApiDocs(Asset)?\s*[=(:]/g) ?? [] };
      })();
      outcomes[name].catch(() => undefined);
    }
  });

  for (const name of Object.keys(GENERATORS)) {
    it(`${name}: compiles under --strict and makes the design, enrolment, paged read, typed 422 and FHIR calls`, async () => {
      const outcome = await present(outcomes[name], `the outcome of ${name}`);
      expect(outcome.study).to.equal(world.code);
      expect(outcome.enrolled).to.match(/^01-\d{3}$/);
      // One patient a page, followed to the end: the four enrolled before and its own at least, each once.
      expect(outcome.subjects).to.have.length.of.at.least(5).and.include(outcome.enrolled).and.include(fhirSubjects[name]);
      expect(outcome.pages).to.be.at.least(outcome.subjects.length);
      expect(new Set(outcome.subjects).size).to.equal(outcome.subjects.length);
      expect(outcome.refusal).to.deep.equal({ status: 422, code: 'unknown_site' });
      expect(outcome.fhir).to.equal('proposed');
      // openapi-typescript-codegen cannot filter: its DocsService answers the page as the string it is.
      if (name === 'codegen') expect(outcome.docsCalls).to.have.length(2);
      else expect(outcome.docsCalls).to.deep.equal([]);
    });
  }
});
