import net from 'node:net';
import { expect } from 'chai';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { grantRole } from '../../src/domain/people/roles.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { addPerson, giveConsent, makeKey, operator } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** Dated inside week 4's window of a patient enrolled on 2026-01-06. */
const VITALS = { vsdate: '2026-02-03', sbp: '120', dbp: '80', hr: '70' };

/** What the service answered a raw request. */
interface Exchange { status: number; headers: Record<string, string>; body: string }

/**
 * A POST whose body arrives in two parts: the headers and the first half at once, the rest only when
 * `finish` is called, as a client on a slow link sends a large body. The service looks the key up from
 * the headers before it reads a byte of the body (spec, Errors), so what happens in between happens while
 * the request is under way.
 */
function slowPost(baseUrl: string, path: string, key: string, body: string): { finish: () => Promise<Exchange> } {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  const bytes = Buffer.from(body, 'utf8');
  const half = Math.floor(bytes.length / 2);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write([`POST ${path} HTTP/1.1`, `Host: ${hostname}`, 'Content-Type: application/json', `Content-Length: ${bytes.length}`,
    `Authorization: Bearer ${key}`, 'Connection: close', '', ''].join('\r\n'));
  socket.write(bytes.subarray(0, half));
  return {
    async finish() {
      socket.write(bytes.subarray(half));
      await closed;
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      return {
        status: Number(statusLine.split(' ')[1]),
        headers: Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])),
        body: rest.join('\r\n\r\n'),
      };
    },
  };
}

describe('a key\'s state and reach when they change while its request\'s body is still arriving', () => {
  const { app, world } = useStudyWorld();
  let subject: string;

  /** Each test writes for a patient of its own (site 01, consent given), so that its write would save a new form. */
  beforeEach(async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-01-06' },
    });
    subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
  });

  const requestsOf = async (keyId: number) =>
    Number(present(await app.db.knex('api_keys').where({ id: keyId }).first<{ request_count: number | string } | undefined>('request_count'), `key ${keyId}`).request_count);

  /** Starts a records call for the patient's week 4 vital signs, and resolves once the service has looked its key up. */
  async function startRecords(key: { key: string; id: number }): Promise<{ finish: () => Promise<Exchange>; countedBefore: number }> {
    const before = await requestsOf(key.id);
    const body = JSON.stringify({ records: [{ subject, visit: 'week4', form: 'vs', values: VITALS }] });
    const upload = slowPost(app.baseUrl, `/api/v1/studies/${world.code}/records`, key.key, body);
    for (let tries = 0; (await requestsOf(key.id)) === before; tries++) {
      if (tries > 200) throw new Error('the service never looked the key up');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { ...upload, countedBefore: before };
  }

  const savedVitals = async () => app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').join('forms as f', 'f.id', 'r.form_id')
    .where({ 'p.subject': subject, 'f.code': 'vs' }).count<{ n: string }[]>({ n: '*' }).then(([row]) => Number(row?.n ?? 0));

  async function expectProblem(exchange: Exchange, status: number, code: string): Promise<void> {
    expect(exchange.status, exchange.body).to.equal(status);
    const problem = JSON.parse(exchange.body) as Problem;
    expect(problem.code).to.equal(code);
    await assertMatchesSpec('submitFormRecords', status, present(exchange.headers['content-type'], 'the Content-Type'), problem);
  }

  it('refuses with 401 key_revoked, saving nothing, a write whose key was revoked before its body had arrived', async () => {
    const made = await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Revoked mid-upload' });
    const upload = await startRecords(made);
    await inTransaction(app.db.knex, (s) => revokeApiKey(s, { study: world.code, keyId: made.id, by: world.manager, via: 'cli' }));
    await expectProblem(await upload.finish(), 401, 'key_revoked');
    expect(await savedVitals()).to.equal(0);
    // A request refused with 401 is not counted (spec, Rate limit), wherever it was refused.
    expect(await requestsOf(made.id)).to.equal(upload.countedBefore);
  });

  it('reaches no site its maker lost before the body had arrived: the patient is unknown to the write', async () => {
    await addPerson(app.db.knex, world.code, 'narrowed-mid-upload@sdx.test', { role: 'manager', canExport: true });
    const made = await makeKey(app.db.knex, { study: world.code, by: 'narrowed-mid-upload@sdx.test', name: 'Narrowed mid-upload' });
    const upload = await startRecords(made);
    await inTransaction(app.db.knex, (s) => grantRole(s, operator, {
      study: world.code, email: 'narrowed-mid-upload@sdx.test', role: 'manager', canExport: true, unblinded: false, sites: ['02'],
    }));
    const exchange = await upload.finish();
    expect(exchange.status).to.equal(200);
    const result = JSON.parse(exchange.body) as AnswerOf<'submitFormRecords', 200>;
    await assertMatchesSpec('submitFormRecords', 200, present(exchange.headers['content-type'], 'the Content-Type'), result);
    expect(result.results.map((r) => [r.status, r.code])).to.deep.equal([['error', 'unknown_subject']]);
    expect(await savedVitals()).to.equal(0);
  });

  it('refuses with 403 api_disabled, saving nothing, a write to a study whose API was switched off before its body had arrived', async () => {
    const upload = await startRecords({ key: world.key, id: world.keyId });
    await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { apiEnabled: false }));
    try {
      await expectProblem(await upload.finish(), 403, 'api_disabled');
      expect(await savedVitals()).to.equal(0);
    } finally {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { apiEnabled: true }));
    }
  });

  it('refuses with 423 study_locked, saving nothing, a write to a study locked before its body had arrived', async () => {
    const upload = await startRecords({ key: world.key, id: world.keyId });
    await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: true }));
    try {
      await expectProblem(await upload.finish(), 423, 'study_locked');
      expect(await savedVitals()).to.equal(0);
    } finally {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: false }));
    }
  });
});
