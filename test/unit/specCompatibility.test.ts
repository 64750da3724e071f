import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';

/**
 * The v1 change policy (docs/versioning.md), checked: spec/openapi.yaml may only add to the released v1
 * contract, frozen in its newest release under spec/released/. The judge is Optic's standard breaking-change rules
 * (`optic diff <released> <current> --check`, npm `@useoptic/optic`, run offline), not rules of our own.
 */
const RELEASED_VERSION = '1.1.0';
const RELEASED = `spec/released/v${RELEASED_VERSION}.yaml`;
/** The released file's SHA-256: a frozen copy edited to let a breaking change through fails here first. */
const RELEASED_SHA256 = 'acf224a2608dd7c68cfee5169e8483ffed3adcaffc11bcbc578f6cd4c9225cac';
const CURRENT = 'spec/openapi.yaml';
const optic = join(dirname(createRequire(import.meta.url).resolve('@useoptic/optic/package.json')), 'build', 'index.js');

/** Optic's verdict on going from `before` to `after`: exit code 0 when nothing breaks, and its report. */
function opticCheck(before: string, after: string): Promise<{ code: number; report: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [optic, 'diff', before, after, '--check'], {
      // No telemetry and no account: the check must work on a machine without internet access.
      env: { ...process.env, OPTIC_TELEMETRY_LEVEL: 'off', NO_COLOR: '1' },
      maxBuffer: 64 * 1024 * 1024,
    }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, report: `${stdout}${stderr}` }));
  });
}

/** The members of the released contract that breakingCopy changes. */
interface Spec {
  paths: {
    '/api/v1/studies/{study_code}/records': { get: { parameters: unknown[] } };
    '/api/v1/studies/{study_code}/queries'?: unknown;
    '/api/v1/studies/{study_code}/patients': { post: { responses: { '409'?: unknown } } };
  };
  components: {
    schemas: {
      PatientPage: { properties: { watermark?: unknown }; required: string[] };
      RecordStatus: { enum: string[] };
      RecordInput: { required: string[] };
    };
  };
}

/** The released contract with one change of each kind the policy forbids inside v1. */
function breakingCopy(): Spec {
  const spec = yaml.load(readFileSync(RELEASED, 'utf8')) as Spec;
  const schemas = spec.components.schemas;
  delete schemas.PatientPage.properties.watermark;
  schemas.PatientPage.required = schemas.PatientPage.required.filter((m) => m !== 'watermark');
  spec.paths['/api/v1/studies/{study_code}/records'].get.parameters.push({ name: 'since', in: 'query', required: true, schema: { type: 'string' } });
  schemas.RecordStatus.enum = ['complete'];
  schemas.RecordInput.required = [...schemas.RecordInput.required, 'instance'];
  delete spec.paths['/api/v1/studies/{study_code}/queries'];
  delete spec.paths['/api/v1/studies/{study_code}/patients'].post.responses['409'];
  return spec;
}

describe(`the v1 contract only grows (spec/openapi.yaml against ${RELEASED})`, function () {
  // Each Optic run takes about ten seconds of CPU; both run at once.
  this.timeout(180_000);
  let current: { code: number; report: string };
  let broken: { code: number; report: string };
  let folder: string;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'sdx-spec-'));
    const brokenFile = join(folder, 'broken.yaml');
    writeFileSync(brokenFile, yaml.dump(breakingCopy()));
    [current, broken] = await Promise.all([opticCheck(RELEASED, CURRENT), opticCheck(RELEASED, brokenFile)]);
  });
  after(() => rmSync(folder, { recursive: true, force: true }));

  it(`the frozen copy is the released v${RELEASED_VERSION}, unchanged`, () => {
    const released = yaml.load(readFileSync(RELEASED, 'utf8')) as { openapi: string; info: { version: string } };
    expect(released.info.version).to.equal(RELEASED_VERSION);
    expect(createHash('sha256').update(readFileSync(RELEASED)).digest('hex')).to.equal(RELEASED_SHA256);
  });

  it('has no breaking change by Optic\'s rules', () => {
    expect(current.code, current.report).to.equal(0);
  });

  it('would fail on each kind of breaking change: removed operation, status, response member, enum value; new required parameter or member', () => {
    expect(broken.code, broken.report).to.not.equal(0);
    for (const rule of [
      'prevent operation removal',
      'prevent response status code removal',
      'prevent removing response property',
      'prevent query parameters enum breaking changes',
      'prevent new required query parameters',
      'prevent changing request property to required',
    ]) expect(broken.report, rule).to.contain(`[${rule}]`);
  });
});
