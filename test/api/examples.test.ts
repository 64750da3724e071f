import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { startContractProxy, type ContractProxy } from '../helpers/contractProxy.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent } from '../helpers/factories.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

interface Run { code: number | null; output: string; subject: string | undefined }

/**
 * Runs one example as a user would (`KEY=… BASE_URL=… <command>`) against the live service behind the
 * contract proxy. The examples cannot record consent (the API has no call for it: the site team does it
 * in the portal), so they wait for it, as a real integration would; the test plays the site team and
 * records consent through the factories as soon as the example says it is waiting.
 */
function runExample(command: string, args: string[], env: Record<string, string>, onWaiting: (subject: string) => Promise<void>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let subject: string | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const waiting = /waiting for consent of patient (\S+)/.exec(output);
      if (waiting?.[1] !== undefined && subject === undefined) {
        subject = waiting[1];
        onWaiting(subject).catch(reject);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output, subject }));
  });
}

const EXAMPLES: { name: string; command: string; args: string[] }[] = [
  { name: 'curl (bash)', command: 'bash', args: ['examples/curl/walkthrough.sh'] },
  { name: 'Python (standard library)', command: 'python3', args: ['examples/python/walkthrough.py'] },
  { name: 'TypeScript (the typed client)', command: process.execPath, args: ['--import', 'tsx', 'examples/typescript/walkthrough.ts'] },
];

describe('examples/: the typical order of use in curl, Python and TypeScript', () => {
  const { app, world } = useStudyWorld();
  let proxy: ContractProxy;

  before(async () => {
    proxy = await startContractProxy(app.baseUrl);
  });
  after(async () => {
    await proxy?.close();
  });

  for (const example of EXAMPLES) {
    it(`${example.name}: design, enrolment, consent by the site, forms, read back, incremental load, FHIR`, async () => {
      const env = { BASE_URL: proxy.url, KEY: world.key, STUDY: world.code, CONSENT_WAIT: '120' };
      const run = await runExample(example.command, example.args, env, (subject) => giveConsent(app.db.knex, world.code, subject, '2026-02-16'));
      expect(run.code, run.output).to.equal(0);
      expect(run.subject).to.match(/^01-\d{3}$/);
      expect(run.output).to.contain(`done: patient ${run.subject}`);

      // What the example sent is in the study: both forms (the baseline one updated), a query, a FHIR import.
      const records = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${run.subject}`, { key: world.key });
      expect(records.body.records.map((r) => [r.visit, r.form, r.status, r.source, r.values.sbp])).to.deep.equal([
        ['screening', 'vs', 'complete', 'api', '138'],
        ['baseline', 'vs', 'complete', 'api', '182'],
      ]);
      const queries = await app.call<AnswerOf<'listQueries', 200>>('GET', `/api/v1/studies/${world.code}/queries?subject=${run.subject}`, { key: world.key });
      expect(queries.body.queries.map((q) => [q.visit, q.field, q.origin])).to.deep.equal([['baseline', 'sbp', 'range']]);
      const imports = await app.db.knex('fhir_imports as f').join('patients as p', 'p.id', 'f.patient_id')
        .where({ 'p.subject': run.subject }).select<{ mode: string; status: string; counts: { values: number } }[]>('f.mode', 'f.status', 'f.counts');
      expect(imports.map((i) => [i.mode, i.status, i.counts.values])).to.deep.equal([['review', 'proposed', 6]]);
    });
  }

  it('sent nothing the contract proxy found breaking the spec', () => {
    expect(proxy.requests).to.be.at.least(EXAMPLES.length * 9);
    expect(proxy.violations).to.deep.equal([]);
  });
});
