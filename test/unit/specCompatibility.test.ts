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
 * contracts, frozen under spec/released/. It is checked against the newest release and the one before it
 * (v1.2.0 was itself checked against v1.1.0 before its release, and still is). The judge is Optic's standard
 * breaking-change rules (`optic diff <released> <current> --check`, npm `@useoptic/optic`, run offline), not
 * rules of our own.
 */
const RELEASES = [
  { version: '1.1.0', sha256: 'acf224a2608dd7c68cfee5169e8483ffed3adcaffc11bcbc578f6cd4c9225cac' },
  { version: '1.2.0', sha256: 'bf6ac24de38d95756430ab7bef73e889693a20e97b45ccd06b81cefd561c84d2' },
].map((release) => ({ ...release, file: `spec/released/v${release.version}.yaml` }));
/** The newest release: the contract a breaking copy is made of. */
const NEWEST = RELEASES[RELEASES.length - 1]!;
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
  const spec = yaml.load(readFileSync(NEWEST.file, 'utf8')) as Spec;
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

describe(`the v1 contract only grows (spec/openapi.yaml against ${RELEASES.map((r) => r.file).join(' and ')})`, function () {
  // Each Optic run takes about ten seconds of CPU; they run at once.
  this.timeout(240_000);
  let current: { code: number; report: string }[];
  let broken: { code: number; report: string };
  let folder: string;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'sdx-spec-'));
    const brokenFile = join(folder, 'broken.yaml');
    writeFileSync(brokenFile, yaml.dump(breakingCopy()));
    [broken, ...current] = await Promise.all([opticCheck(NEWEST.file, brokenFile), ...RELEASES.map((r) => opticCheck(r.file, CURRENT))]);
  });
  after(() => rmSync(folder, { recursive: true, force: true }));

  for (const release of RELEASES) {
    it(`the frozen copy is the released v${release.version}, unchanged`, () => {
      const released = yaml.load(readFileSync(release.file, 'utf8')) as { openapi: string; info: { version: string } };
      expect(released.info.version).to.equal(release.version);
      expect(createHash('sha256').update(readFileSync(release.file)).digest('hex')).to.equal(release.sha256);
    });
  }

  it('has no breaking change by Optic\'s rules against any of them', () => {
    for (const [i, result] of current.entries()) expect(result.code, `${RELEASES[i]?.file}: ${result.report}`).to.equal(0);
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
