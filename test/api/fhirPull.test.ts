import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startContractProxy, type ContractProxy } from '../helpers/contractProxy.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent } from '../helpers/factories.js';
import type { FhirImportItem } from '../../src/domain/fhir/fhirImportItem.js';
import { startFhirServer, type FhirServer } from '../helpers/fhirServer.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { CASES, type PatientCase } from '../helpers/syntheaCases.js';
import { testEnv } from '../helpers/testDatabase.js';

const run = promisify(execFile);
const SYNTHEA = 'test/fixtures/fhir/synthea';

/** The Synthea patient's id on the FHIR server: the id of the Patient resource in the file. */
const patientIds = {
  'smart-emery-purdy-897kb.json': 'efe58fa2-c6df-4a71-8e37-06c5e4f1e2b8',
  'smart-buster-hoeger-235kb.json': 'e4531916-b162-4f4b-90c2-ce37e132b8d4',
} as const;
type SyntheaFile = keyof typeof patientIds;
const FILES = Object.keys(patientIds) as SyntheaFile[];

/** What `sdx fhir push --json` prints: the import's summary, or the error that stopped it. */
interface PushOutput {
  study?: string;
  subject?: string;
  via?: 'everything' | 'search';
  status?: string;
  mode?: string;
  pages?: number;
  resources?: Record<string, number>;
  review_url?: string;
  counts?: { saved: number };
  error?: { code: string };
}

/** Runs `sdx fhir push … --json` as a child process; the one JSON object it prints, and its exit code. */
async function push(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ out: PushOutput; code: number }> {
  const result = await run('node', ['--import', 'tsx', 'scripts/sdx.ts', 'fhir', 'push', ...args, '--json'], { env: { ...process.env, ...testEnv, ...env } })
    .then((r) => ({ stdout: r.stdout, code: 0 }), (e: { stdout: string; code: number }) => ({ stdout: e.stdout, code: e.code }));
  const lines = String(result.stdout).trim().split('\n');
  expect(lines, `sdx fhir push prints one JSON object: ${result.stdout}`).to.have.length(1);
  return { out: JSON.parse(at(lines, 0)) as PushOutput, code: result.code };
}

const caseOf = (file: string): PatientCase => present(CASES.find((c) => c.file === file), `the case of ${file}`);

describe('sdx fhir push: a patient pulled from a hospital FHIR server into the study', () => {
  const { app, world } = useStudyWorld();
  let proxy: ContractProxy;
  let everything: FhirServer;
  let searchOnly: FhirServer;
  const enrolled: Partial<Record<SyntheaFile, string>> = {};
  /** The study subject enrolled for a Synthea patient by the suite's `before`. */
  const subjectOf = (file: SyntheaFile) => present(enrolled[file], `the subject of ${file}`);

  before(async () => {
    for (const file of FILES) {
      const c = caseOf(file);
      const made = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: c.sex, birth_year: c.birthYear, enrolled_on: c.enrolledOn } });
      expect(made.status).to.equal(201);
      enrolled[file] = made.body.subject;
      await giveConsent(app.db.knex, world.code, made.body.subject, '2000-01-01');
    }
    const files = FILES.map((f) => `${SYNTHEA}/${f}`);
    everything = await startFhirServer(files, { pageSize: 50 });
    searchOnly = await startFhirServer(files, { everything: false, pageSize: 20 });
    // The pushes go through the contract proxy too: what the command sends must be what the spec allows.
    proxy = await startContractProxy(app.baseUrl);
  });
  after(async () => {
    await proxy?.close();
    await everything?.close();
    await searchOnly?.close();
  });

  it('pulls Patient/$everything page by page and proposes every mapped value for review', async () => {
    const file: SyntheaFile = 'smart-emery-purdy-897kb.json';
    const { out, code } = await push(['--from', everything.base, '--patient', patientIds[file], '--study', world.code, '--subject', subjectOf(file), '--key', world.key, '--api', proxy.url]);
    expect(code).to.equal(0);
    expect(out).to.include({ study: world.code, subject: subjectOf(file), via: 'everything', status: 'proposed', mode: 'review' });
    // The patient and the 298 resources that point at them: six pages of 50, each next link followed.
    expect(out.pages).to.equal(6);
    expect(everything.requests.filter((r) => r.includes('$everything'))).to.deep.equal([
      `GET /Patient/${patientIds[file]}/$everything`, ...[2, 3, 4, 5, 6].map((n) => `GET /Patient/${patientIds[file]}/$everything?_page=${n}`),
    ]);
    expect(out.resources).to.include({ Patient: 1, Observation: 190, Condition: 11, MedicationRequest: 4 });
    expect(out.resources).to.not.have.any.keys('Encounter', 'Claim', 'ExplanationOfBenefit');
    expect(out.review_url).to.equal(`http://sdx.test/p/${world.code}/s/${subjectOf(file)}/fhir/1`);

    // Every measurement the demo mapping places from this patient's file arrived: nothing was lost between pages.
    const stored = await app.db.knex('fhir_imports as f').join('patients as p', 'p.id', 'f.patient_id').where({ 'p.subject': subjectOf(file), 'f.number': 1 })
      .first<{ items: FhirImportItem[] } | undefined>('f.items');
    const proposed = present(stored, 'the import').items.filter((i) => i.state === 'new' && i.resource.startsWith('Observation/'));
    expect(proposed.map((i) => [i.visit, i.form, i.field, i.resource, i.value])).to.have.deep.members(caseOf(file).placed);
    const read = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subjectOf(file)}`, { key: world.key });
    expect(read.body.records, 'review mode saves nothing').to.deep.equal([]);
  });

  it('falls back to searches by patient when the server has no $everything, and saves the new values', async () => {
    const file: SyntheaFile = 'smart-buster-hoeger-235kb.json';
    const { out, code } = await push(
      ['--from', searchOnly.base, '--patient', patientIds[file], '--study', world.code, '--subject', subjectOf(file), '--mode', 'save', '--api', proxy.url],
      { SDX_API_KEY: world.key },
    );
    expect(code).to.equal(0);
    expect(out).to.include({ subject: subjectOf(file), via: 'search', mode: 'save' });
    expect(searchOnly.requests).to.include.members([
      `GET /Patient/${patientIds[file]}`,
      `GET /Patient/${patientIds[file]}/$everything`,
      `GET /Observation?patient=${patientIds[file]}`,
      `GET /Observation?patient=${patientIds[file]}&_page=2`,
      `GET /Condition?patient=${patientIds[file]}`,
      `GET /MedicationStatement?patient=${patientIds[file]}`,
      `GET /MedicationRequest?patient=${patientIds[file]}`,
    ]);
    expect(out.resources).to.deep.equal({ Patient: 1, Observation: 33, Condition: 3, MedicationRequest: 1 });
    expect(out.counts?.saved).to.be.above(0);

    // What the import says it saved is what the API reads back, digit for digit (81.0 stays 81.0), from the FHIR source.
    const read = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subjectOf(file)}`, { key: world.key });
    const savedValues = read.body.records.flatMap((r) => Object.entries(r.values).map(([field, value]) => [r.visit, r.form, field, value, r.source]));
    for (const [visit, form, field, , value] of caseOf(file).placed) {
      if (form === 'vs' || form === 'lab_hem' || form === 'dm') expect(savedValues, `${visit} ${form}.${field}`).to.deep.include([visit, form, field, value, 'fhir']);
    }
  });

  it('reports an unknown FHIR patient and a refusal of the service each with its code, and exits non-zero', async () => {
    const unknown = await push(['--from', everything.base, '--patient', 'nobody', '--study', world.code, '--subject', '01-001', '--key', world.key, '--api', proxy.url]);
    expect(unknown.code).to.equal(1);
    expect(unknown.out.error?.code).to.equal('fhir_patient_not_found');
    // The Synthea patient's sex and birth year are not those of the other study patient.
    const file: SyntheaFile = 'smart-emery-purdy-897kb.json';
    const other = subjectOf('smart-buster-hoeger-235kb.json');
    const mismatch = await push(['--from', everything.base, '--patient', patientIds[file], '--study', world.code, '--subject', other, '--key', world.key, '--api', proxy.url]);
    expect(mismatch.code).to.equal(1);
    expect(mismatch.out.error?.code).to.equal('fhir_identity_mismatch');
    const noKey = await push(['--from', everything.base, '--patient', patientIds[file], '--study', world.code, '--subject', other, '--api', proxy.url], { SDX_API_KEY: '' });
    expect(noKey.out.error?.code).to.equal('usage');
  });

  it('follows no next page outside the server\'s base address and no paging loop: the pull stops with fhir_paging_refused, sending nothing', async () => {
    const file: SyntheaFile = 'smart-buster-hoeger-235kb.json';
    const bystander = await startFhirServer([]);
    const elsewhere = await startFhirServer([`${SYNTHEA}/${file}`], { pageSize: 20, nextLink: (next) => next.replace(/^http:\/\/[^/]+\/fhir/, bystander.base) });
    const circle = await startFhirServer([`${SYNTHEA}/${file}`], { pageSize: 20, nextLink: (next) => next.replace(/_page=\d+/, '_page=1') });
    const imports = async () => Number(at(await app.db.knex('fhir_imports').count<{ n: string }[]>({ n: '*' }), 0).n);
    const before = await imports();
    try {
      for (const server of [elsewhere, circle]) {
        const pushed = await push(['--from', server.base, '--patient', patientIds[file], '--study', world.code, '--subject', subjectOf(file), '--key', world.key, '--api', proxy.url]);
        expect(pushed.code).to.equal(1);
        expect(pushed.out.error?.code).to.equal('fhir_paging_refused');
      }
      expect(bystander.requests, 'the address the hospital server named was never asked').to.deep.equal([]);
      // The circle: the first page, then page 1 once more through its link, and no further.
      expect(circle.requests.filter((r) => r.includes('$everything'))).to.have.length(2);
      expect(await imports()).to.equal(before);
    } finally {
      await Promise.all([bystander.close(), elsewhere.close(), circle.close()]);
    }
  });

  it('sent nothing the contract proxy found breaking the spec', () => {
    expect(proxy.requests).to.be.at.least(3);
    expect(proxy.violations).to.deep.equal([]);
  });
});
