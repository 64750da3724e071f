import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { sdx } from '../helpers/sdxCli.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { resetDatabase, testDatabase, testEnv } from '../helpers/testDatabase.js';

const run = promisify(execFile);

/** The `sh` code blocks of the README's walk-through section, in order. */
function walkthroughBlocks(readme: string): string[] {
  const start = readme.indexOf('## A walk-through with curl');
  expect(start, 'the README has its walk-through section').to.be.at.least(0);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  // Blocks inside the numbered steps are indented: the indentation goes, the commands stay as written.
  return [...section.matchAll(/^( *)```sh\n([\s\S]*?)^ *```$/gm)].map(([, indent = '', body = '']) =>
    body.split('\n').map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line)).join('\n').trimEnd());
}

interface Answer<Body = unknown> { status: number; body: Body; etag: string | undefined }

/** The walk-through's seven calls, in the order it makes them. */
type WalkthroughAnswers = [
  Answer<AnswerOf<'getStudyDesign', 200>>, Answer<AnswerOf<'createPatient', 201>>, Answer<AnswerOf<'submitFormRecords', 200>>,
  Answer<AnswerOf<'listFormRecords', 200>>, Answer<AnswerOf<'listQueries', 200>>, Answer<AnswerOf<'listPatients', 200>>,
  Answer<AnswerOf<'importFhirRecord', 201>>,
];

/**
 * The README's walk-through, run verbatim with bash against a service process started for it, with the
 * key `make run` makes (`sdx demo`). Every curl goes through a shell function that keeps the status,
 * headers and body of each answer, so each step's outcome is checked; the consent line runs the real
 * command line on the same database. If the README and the service drift apart, this fails.
 */
describe('README: the walk-through with curl runs as written', () => {
  let service: ServiceProcess;
  let key: string;
  let out: string;

  before(async function () {
    this.timeout(120_000);
    await resetDatabase((await testDatabase()).knex);
    ({ key } = await sdx<{ key: string }>('demo'));
    service = await startServiceProcess({});
    out = await mkdtemp(path.join(os.tmpdir(), 'sdx-readme-'));
  });
  after(async () => {
    await service?.stop();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('steps 1–5 give the answers the README describes', async function () {
    this.timeout(120_000);
    const [settings, ...steps] = walkthroughBlocks(await readFile('README.md', 'utf8'));
    const variables = present(settings, 'the walk-through\'s settings block');
    // The README's own settings, with the key of this run and the address of this service.
    expect(variables).to.match(/^KEY=sdx_… /m);
    const base = /^B=(\S+)/m.exec(variables)?.[1];
    expect(base).to.equal('http://localhost:8080/api/v1');
    const script = [
      'set -euo pipefail',
      `KEY='${key}'`,
      `B='${present(base, 'the base address').replace('http://localhost:8080', service.baseUrl)}'`,
      'n=0',
      // Each answer's status, headers and body in files numbered in the order of the calls.
      'curl() { n=$((n + 1)); command curl -sS -D "$OUT/$n.headers" -o "$OUT/$n.body" -w \'%{http_code}\' "$@" > "$OUT/$n.status"; }',
      ...steps,
      'echo "calls: $n"',
    ].join('\n');
    const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, ...testEnv, OUT: out } });
    expect(stdout).to.contain('calls: 7');
    expect(steps.join('\n'), 'the walk-through records consent with the command line').to.match(/^node bin\/sdx\.js patient consent DEMO 01-001 /m);

    const answers: Answer[] = [];
    for (let n = 1; n <= 7; n++) {
      const text = await readFile(path.join(out, `${n}.body`), 'utf8');
      const headers = await readFile(path.join(out, `${n}.headers`), 'utf8');
      answers.push({ status: Number(await readFile(path.join(out, `${n}.status`), 'utf8')), body: JSON.parse(text) as unknown, etag: /^etag: (.+?)\r?$/im.exec(headers)?.[1] });
    }
    // The body types are the contract's for each step; the statuses below say whether each step got that answer.
    const [design, enrolment, records, recordsPage, queries, patients, fhir] = answers as WalkthroughAnswers;

    expect(design.status, 'step 1: the study design').to.equal(200);
    expect(design.body.study.code).to.equal('DEMO');
    expect(design.etag, 'step 1: the design carries an ETag').to.be.a('string');

    expect(enrolment.status, 'step 2: enrolment').to.equal(201);
    expect(enrolment.body.subject, 'step 2: the site\'s first number, as the consent line and later steps use').to.equal('01-001');

    expect(records.status, 'step 3: visit forms').to.equal(200);
    expect(records.body.results.map((r) => [r.status, r.code]), 'step 3: 232 is out of range, the record is saved with a query')
      .to.deep.equal([['warn', 'saved_with_queries']]);

    expect(recordsPage.status).to.equal(200);
    expect(recordsPage.body.records.map((r) => [r.subject, r.visit, r.form, r.values.sbp]), 'step 4: the record reads back')
      .to.deep.equal([['01-001', 'screening', 'vs', '232']]);
    expect(queries.status).to.equal(200);
    expect(queries.body.queries.map((q) => [q.subject, q.field, q.origin]), 'step 4: the automatic query is open')
      .to.deep.equal([['01-001', 'sbp', 'range']]);
    expect(patients.status).to.equal(200);
    expect(patients.body.patients.map((p) => p.subject), 'step 4: the patient is in the incremental load').to.deep.equal(['01-001']);

    expect(fhir.status, `step 5: the FHIR record (${JSON.stringify(fhir.body)})`).to.equal(201);
    expect([fhir.body.mode, fhir.body.status, fhir.body.counts.values], 'step 5: six values proposed for review').to.deep.equal(['review', 'proposed', 6]);
    expect(fhir.body.review_url).to.be.a('string');
  });
});
