import { expect } from 'chai';
import { revokeApiKey } from '../../src/domain/apiKeys/revokeApiKey.js';
import { inTransaction } from '../../src/db/stores.js';
import { giveConsent, makeKey } from '../helpers/factories.js';
import { assertMatchesSpec, operationOf } from '../helpers/specValidation.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';

/** An answer of either process; its body is read only for a refusal's members, which a page lacks. */
interface Answer { status: number; headers: Headers; body: Partial<Problem> }

/**
 * A keyed GET on either process, its answer checked against the spec like every answer of the suite.
 * `checked: false` leaves the check to the service itself (it validates its own answers under
 * NODE_ENV=test), so a burst of hundreds of calls is not slowed by the test process.
 */
async function get(baseUrl: string, path: string, key: string, checked = true): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const body: unknown = text && contentType.includes('json') ? JSON.parse(text) : text;
  if (checked) await assertMatchesSpec(await operationOf('GET', at(path.split('?'), 0)), response.status, contentType, body);
  return { status: response.status, headers: response.headers, body: body as Partial<Problem> };
}

/** Runs `count` calls, `width` at a time. */
async function concurrently<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  }));
  return results;
}

const rateHeaders = (a: Answer) => ({
  limit: a.headers.get('ratelimit-limit'), remaining: a.headers.get('ratelimit-remaining'), reset: Number(a.headers.get('ratelimit-reset')),
});

describe('rate limit and usage counters across service processes', () => {
  const { app, world } = useStudyWorld();
  let second: ServiceProcess;
  let small: TestApp;
  let smallTwin: TestApp;

  before(async function () {
    // Starting a second service process compiles the whole service once more: slow on a busy machine.
    this.timeout(120_000);
    // The service at the default 600 a minute in this process (`app`) and in a second OS process, and two
    // more instances at 5 a minute in this process (each with its own limiter) for the window's details.
    [second, small, smallTwin] = await Promise.all([
      startServiceProcess({}),
      startTestApp({ RATE_LIMIT_PER_MINUTE: '5' }),
      startTestApp({ RATE_LIMIT_PER_MINUTE: '5' }),
    ]);
    for (const site of ['01', '02']) {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/DEMO/patients', { key: world.key, body: { site, sex: 'male', birth_year: 1970, enrolled_on: '2026-02-01' } });
      expect(enrolled.status).to.equal(201);
      await giveConsent(app.db.knex, 'DEMO', enrolled.body.subject);
    }
  });
  after(async () => {
    await Promise.all([second?.stop(), small?.close(), smallTwin?.close()]);
  });

  it('answers 601 reads inside a minute from one key, spread over two processes, with exactly one 429; request count and rows read are exact', async () => {
    const { key, id } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Busy LIMS' });
    const bases = [app.baseUrl, second.baseUrl];
    // 601 one-row reads, 16 at a time, alternating between the two processes: a few seconds on an idle machine.
    const started = Date.now();
    const answers = await concurrently(601, 16, (i) => get(at(bases, i % 2), '/api/v1/studies/DEMO/patients?limit=1', key, false));
    // Not an assertion on time: only said when the counts fail, since the window is a minute from the first request.
    const took = `the 601 answers took ${Date.now() - started} ms`;
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200), took).to.have.length(600);
    expect(statuses.filter((s) => s === 429), took).to.have.length(1);
    const refused = present(answers.find((a) => a.status === 429), 'the refused answer');
    expect(refused.body).to.include({ code: 'rate_limited', status: 429 });
    expect(refused.body.detail).to.match(/^This API key made more than 600 requests in a minute; retry after \d+ s\.$/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    expect(rateHeaders(refused)).to.deep.equal({ limit: '600', remaining: '0', reset: retryAfter });
    // Each process answered half of the requests, and their remaining counts are one shared count.
    for (const side of [0, 1]) expect(answers.filter((a, i) => i % 2 === side && a.status === 200).length).to.be.at.least(300 - side);
    const remaining = answers.filter((a) => a.status === 200).map((a) => Number(a.headers.get('ratelimit-remaining'))).sort((a, b) => a - b);
    expect(remaining).to.deep.equal(Array.from({ length: 600 }, (_, i) => i));

    const row = await app.db.knex('api_keys').where({ id }).first<{ request_count: number; rows_read: number; last_used_at: Date | null } | undefined>();
    expect(row?.request_count).to.equal(601);
    expect(row?.rows_read).to.equal(600);
    expect(row?.last_used_at).to.be.instanceOf(Date);
    const logged = await app.db.knex('read_log').where({ api_key_id: id }).select(app.db.knex.raw('count(*)::int as n, sum(rows)::int as rows')).first<{ n: number; rows: number } | undefined>();
    expect(logged).to.deep.equal({ n: 600, rows: 600 });
  });

  it('counts RATE_LIMIT_PER_MINUTE as one window per key shared by every instance, and says when to retry', async () => {
    const { key } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Small window' });
    const seen = [];
    for (const base of [small.baseUrl, small.baseUrl, smallTwin.baseUrl, small.baseUrl, smallTwin.baseUrl]) {
      const answer = await get(base, '/api/v1/studies/DEMO', key);
      expect(answer.status).to.equal(200);
      seen.push(rateHeaders(answer).remaining);
    }
    expect(seen).to.deep.equal(['4', '3', '2', '1', '0']);
    const refused = await get(smallTwin.baseUrl, '/api/v1/studies/DEMO', key);
    expect(refused.status).to.equal(429);
    expect(refused.body).to.include({ code: 'rate_limited', detail: `This API key made more than 5 requests in a minute; retry after ${refused.headers.get('retry-after')} s.` });
    expect(rateHeaders(refused)).to.include({ limit: '5', remaining: '0' });
    expect(Number(refused.headers.get('retry-after'))).to.equal(rateHeaders(refused).reset);
    // The second OS process, configured for 600, counts on in the same minute: 5 let through and this one (the 429 took no place).
    expect(rateHeaders(await get(second.baseUrl, '/api/v1/studies/DEMO', key))).to.include({ limit: '600', remaining: '594' });
    // Another key has a window of its own.
    const other = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Quiet system' });
    expect(rateHeaders(await get(small.baseUrl, '/api/v1/studies/DEMO', other.key))).to.include({ limit: '5', remaining: '4' });
  });

  it('counts refused calls of a working key (403, 404) against its window, and answers them with the rate headers', async () => {
    const { key, id } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Writer only', canRead: false });
    const forbidden = await get(small.baseUrl, '/api/v1/studies/DEMO/records', key);
    expect(forbidden.status).to.equal(403);
    expect(rateHeaders(forbidden)).to.include({ limit: '5', remaining: '4' });
    const notFound = await get(smallTwin.baseUrl, '/api/v1/studies/NOSUCH', key);
    expect(notFound.status).to.equal(404);
    expect(rateHeaders(notFound)).to.include({ limit: '5', remaining: '3' });
    const badFilter = await get(small.baseUrl, '/api/v1/studies/DEMO?colour=red', key);
    expect(badFilter.status).to.equal(400);
    expect(rateHeaders(badFilter)).to.include({ limit: '5', remaining: '2' });
    expect((await app.db.knex('api_keys').where({ id }).first<{ request_count: number } | undefined>())?.request_count).to.equal(3);
  });

  it('counts a working key\'s call whose body is refused once read (not JSON), not one refused from its headers alone (415), nor one of no key', async () => {
    const { key, id } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Clumsy sender' });
    const post = (type: string, body: string, bearer = key) => fetch(`${small.baseUrl}/api/v1/studies/DEMO/records`, {
      method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': type }, body,
    });
    const notJson = await post('application/json', '{"records": [');
    expect(notJson.status).to.equal(422);
    expect((await notJson.json() as Problem).code).to.equal('invalid_body');
    const wrongType = await post('text/plain', 'records');
    expect(wrongType.status).to.equal(415);
    await wrongType.text();
    // A value of no key (here not even well-formed) is refused from the headers, before its body is read: nothing is counted.
    const unknown = await post('application/json', '{"records": [', `${key.slice(0, -6)}AAAAAA`);
    expect(unknown.status).to.equal(401);
    expect(unknown.headers.get('connection')).to.equal('close');
    await unknown.text();
    expect((await app.db.knex('api_keys').where({ id }).first<{ request_count: number } | undefined>())?.request_count).to.equal(1);
    expect(rateHeaders(await get(small.baseUrl, '/api/v1/studies/DEMO', key))).to.include({ limit: '5', remaining: '3' });
  });

  it('does not count requests refused with 401: a revoked key never reaches 429', async () => {
    const { key, id } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Revoked early' });
    await inTransaction(app.db.knex, (s) => revokeApiKey(s, { study: 'DEMO', keyId: id, by: world.manager, via: 'cli' }));
    const answers = await concurrently(8, 4, (i) => get(i % 2 ? small.baseUrl : smallTwin.baseUrl, '/api/v1/studies/DEMO', key));
    expect(answers.map((a) => `${a.status} ${a.body.code}`)).to.deep.equal(new Array(8).fill('401 key_revoked'));
    for (const a of answers) expect(a.headers.get('ratelimit-limit')).to.equal(null);
    expect(await app.db.knex('rate_limits').where({ key: `key:${id}` }).first()).to.equal(undefined);
    expect((await app.db.knex('api_keys').where({ id }).first<{ request_count: number } | undefined>())?.request_count).to.equal(0);
  });

  it('counts over a sliding minute: a place frees up when the request that held it is a minute old, not before', async () => {
    const { key, id } = await makeKey(app.db.knex, { study: 'DEMO', by: world.manager, name: 'Next minute' });
    for (let i = 0; i < 5; i++) expect((await get(smallTwin.baseUrl, '/api/v1/studies/DEMO', key)).status).to.equal(200);
    const refused = await get(small.baseUrl, '/api/v1/studies/DEMO', key);
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(59, 60);
    // Test set-up: the first two requests are a minute old instead of waiting a minute; the other three are not.
    await app.db.knex.raw(`update rate_limits set hits[1] = hits[1] - 60000, hits[2] = hits[2] - 60000 where key = ?`, [`key:${id}`]);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await get(small.baseUrl, '/api/v1/studies/DEMO', key));
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 429]);
    expect(rateHeaders(at(answers, 1))).to.include({ limit: '5', remaining: '0' });
    // The next place frees up when the third of the first five is a minute old.
    expect(rateHeaders(at(answers, 1)).reset).to.be.within(58, 60);
  });
});
