import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import { giveConsent, makeBlindedKey, makeKey, operator } from '../helpers/factories.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply } from '../helpers/testApp.js';

/**
 * Queries both ways (issue 22.2) through real HTTP: keys answer, raise and close queries, each step shows
 * in the queries read (opener, thread, closer) and in the audit read with `<key name> (API)` as author,
 * and the refusals: rights, sites, blinding, consent, states, empty texts, and the Russian message.
 */

type Query = AnswerOf<'listQueries', 200>['queries'][number];
type AuditRow = AnswerOf<'listAuditTrail', 200>['audit'][number];
type RecordResult = AnswerOf<'submitFormRecords', 200>['results'][number];
/** A request body the test builds, right or deliberately wrong. */
type Body = Record<string, unknown>;

describe('queryThreads', () => {
  const { app, world } = useStudyWorld({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  /** Keys besides the world's own (every right, every site, an unblinded maker). */
  const keys = { lab: '', sponsor: '', readOnly: '', siteTwo: '', blinded: '' };

  const base = '/api/v1/studies/DEMO';
  const answer = (id: number, key: string, body: unknown, headers: Record<string, string> = {}) =>
    app.call<AnswerOf<'answerQuery', 201>>('POST', `${base}/queries/${id}/answers`, { key, body, headers });
  const close = (id: number, key: string, body: unknown) => app.call<AnswerOf<'closeQuery', 200>>('POST', `${base}/queries/${id}/close`, { key, body });
  const raise = (key: string, body: Body) => app.call<AnswerOf<'openQuery', 201>>('POST', `${base}/queries`, { key, body });

  async function queriesOf(subject: string, key = world.key): Promise<Query[]> {
    const res = await app.call<AnswerOf<'listQueries', 200>>('GET', `${base}/queries?subject=${subject}`, { key });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.queries;
  }

  async function auditOf(subject: string): Promise<AuditRow[]> {
    const res = await app.call<AnswerOf<'listAuditTrail', 200>>('GET', `${base}/audit?subject=${subject}&limit=1000`, { key: world.key });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.audit;
  }

  async function send(key: string, records: Body[]): Promise<RecordResult[]> {
    const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key, body: { records } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.results;
  }

  async function enrol(site: string): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base}/patients`, { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-03-01' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await giveConsent(app.db.knex, 'DEMO', res.body.subject, '2026-02-01');
    return res.body.subject;
  }

  /** A refusal's body, which the test app has checked against the spec's Problem. */
  const refusal = (res: Reply) => res.body as Problem;
  /** The problem's code, pointers and detail: what a client acts on. */
  const problem = (res: Reply) => ({ status: res.status, code: refusal(res).code, pointers: [...new Set((refusal(res).errors ?? []).map((e) => e.pointer))] });
  /** The message of a refusal's first field error. */
  const firstMessage = (res: Reply) => at(refusal(res).errors ?? [], 0, 'the errors').message;

  /** The automatic sbp query of a patient, as the world's key reads it. */
  async function sbpQuery(subject: string): Promise<Query> {
    const query = (await queriesOf(subject)).find((q) => q.field === 'sbp' && q.origin === 'range');
    return present(query, `the sbp query of ${subject}`);
  }

  before(async () => {
    const knex = app.db.knex;
    keys.lab = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Ward LIMS' })).key;
    keys.sponsor = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Sponsor CTMS' })).key;
    keys.readOnly = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Reader', canWrite: false })).key;
    keys.siteTwo = (await makeKey(knex, { study: 'DEMO', by: world.manager, name: 'Site 02 LIMS', sites: ['02'] })).key;
    keys.blinded = await makeBlindedKey(knex, 'DEMO', 'Blinded sponsor');
    for (const site of ['01', '01', '02', '01']) await enrol(site);
    const vs = (subject: string, sbp: string) => ({ subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-02-14', sbp, dbp: '85', hr: '70' } });
    const dm = (subject: string) => ({ subject, visit: 'screening', form: 'dm', values: { sex: '1', height: '165.5', weight: '70.2' } });
    const results = await send(keys.lab, [
      vs('01-001', '232'), dm('01-001'), vs('01-002', '231'), vs('02-001', '233'), vs('01-003', '120'),
      { subject: '01-001', visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0042', arm: 'B' } },
    ]);
    expect(results.map((r) => r.code)).to.deep.equal(['saved_with_queries', 'saved', 'saved_with_queries', 'saved_with_queries', 'saved', 'saved']);
  });

  describe('a key answers an automatic query', () => {
    let query: Query;
    let answered: Reply<AnswerOf<'answerQuery', 201>>;

    before(async () => {
      query = await sbpQuery('01-001');
      answered = await answer(query.id, keys.lab, { text: 'Confirmed against the source: 232 mmHg, repeated twice.' });
    });

    it('adds the answer to the thread and marks the query answered (201, the query as it now is)', () => {
      expect(answered.status, JSON.stringify(answered.body)).to.equal(201);
      expect(answered.body).to.deep.include({ id: query.id, status: 'answered', origin: 'range', closed_by: null, close_reason: null });
      expect(answered.body.opened_by).to.deep.equal({ kind: 'system', name: 'Ward LIMS (API)' });
      expect(answered.body.answers).to.have.length(1);
      expect(at(answered.body.answers, 0)).to.deep.include({ text: 'Confirmed against the source: 232 mmHg, repeated twice.', author: { kind: 'api_key', name: 'Ward LIMS (API)' } });
      expect(Date.parse(answered.body.updated_at)).to.be.above(Date.parse(query.updated_at));
    });

    it('shows in the queries read, thread included', async () => {
      const read = (await queriesOf('01-001')).find((q) => q.id === query.id);
      expect(read).to.deep.equal(answered.body);
    });

    it('shows in the audit read with the key as author', async () => {
      const row = (await auditOf('01-001')).find((a) => a.action === 'query.answered');
      expect(row).to.deep.include({
        author: 'Ward LIMS (API)', field: 'sbp', visit: 'screening', form: 'vs', new_value: 'Confirmed against the source: 232 mmHg, repeated twice.',
      });
      expect(present(row, 'the query.answered row').details).to.deep.equal({ query_id: query.id, answer_id: at(answered.body.answers, 0).id });
    });

    it('an answered automatic query may be closed by any writer of its site, with its reason kept', async () => {
      const closed = await close(query.id, keys.sponsor, { reason: 'Value confirmed by the site.' });
      expect(closed.status, JSON.stringify(closed.body)).to.equal(200);
      expect(closed.body).to.deep.include({ status: 'closed', close_reason: 'Value confirmed by the site.', closed_by: { kind: 'api_key', name: 'Sponsor CTMS (API)' } });
      expect(closed.body.closed_at).to.be.a('string');
      expect((await queriesOf('01-001')).find((q) => q.id === query.id)).to.deep.equal(closed.body);
      const row = (await auditOf('01-001')).find((a) => a.action === 'query.closed');
      expect(row).to.deep.include({ author: 'Sponsor CTMS (API)', field: 'sbp' });
      expect(present(row, 'the query.closed row').reason).to.equal('Data sent through the API key "Sponsor CTMS": Value confirmed by the site.');
    });

    it('a closed query takes no answer and no second closing (409 query_closed)', async () => {
      const again = await answer(query.id, keys.lab, { text: 'One more thing.' });
      expect(problem(again)).to.deep.equal({ status: 409, code: 'query_closed', pointers: [] });
      expect(refusal(again).detail).to.equal(`Query ${query.id} is closed; it takes no answer and cannot be closed again.`);
      expect(problem(await close(query.id, keys.sponsor, { reason: 'Twice.' }))).to.deep.equal({ status: 409, code: 'query_closed', pointers: [] });
    });

    it('says so in Russian with lang=ru', async () => {
      const res = await app.call('POST', `${base}/queries/${query.id}/answers?lang=ru`, { key: keys.lab, body: { text: 'Ещё раз.' } });
      expect(res.status).to.equal(409);
      expect(refusal(res).title).to.equal('Запрос закрыт');
      expect(refusal(res).detail).to.equal(`Запрос ${query.id} закрыт: на него нельзя ответить и его нельзя закрыть снова.`);
    });
  });

  describe('an answered automatic query still closes itself when the value is corrected', () => {
    it('closes with the service as closer and the correction as reason', async () => {
      const query = await sbpQuery('01-002');
      expect((await answer(query.id, keys.lab, { text: 'Typo, will correct.' })).status).to.equal(201);
      const result = only(await send(keys.lab, [{ subject: '01-002', visit: 'screening', form: 'vs', values: { sbp: '131' }, update: true }]));
      expect(result.code).to.equal('saved');
      const read = present((await queriesOf('01-002')).find((q) => q.id === query.id), `query ${query.id}`);
      expect(read).to.deep.include({ status: 'closed', closed_by: { kind: 'system', name: 'Ward LIMS (API)' }, close_reason: 'The value that caused the query was corrected.' });
      expect(read.answers.map((a) => a.text)).to.deep.equal(['Typo, will correct.']);
    });
  });

  describe('a key raises a query and closes it', () => {
    let raised: Reply<AnswerOf<'openQuery', 201>>;

    before(async () => {
      raised = await raise(keys.sponsor, { subject: '01-001', visit: 'screening', form: 'dm', field: 'height', message: 'Height 165.5 cm: please check the unit.' });
    });

    it('opens a manual query on the field, opened by the key (201)', () => {
      expect(raised.status, JSON.stringify(raised.body)).to.equal(201);
      expect(raised.body).to.deep.include({
        subject: '01-001', site: '01', visit: 'screening', instance: 1, form: 'dm', field: 'height', status: 'open', origin: 'manual',
        message: 'Height 165.5 cm: please check the unit.', answers: [], closed_by: null, close_reason: null, closed_at: null,
      });
      expect(raised.body.opened_by).to.deep.equal({ kind: 'api_key', name: 'Sponsor CTMS (API)' });
    });

    it('another key may not close it while it is open and unanswered (409 query_not_closable)', async () => {
      const res = await close(raised.body.id, keys.lab, { reason: 'Not mine to close.' });
      expect(problem(res)).to.deep.equal({ status: 409, code: 'query_not_closable', pointers: [] });
      expect(refusal(res).detail).to.equal(`Query ${raised.body.id} is open and was raised by someone else; it can be closed once it is answered.`);
    });

    it('the key that raised it closes it (200), and both steps are in the queries read and the audit read', async () => {
      const closed = await close(raised.body.id, keys.sponsor, { reason: 'Raised in error.' });
      expect(closed.status, JSON.stringify(closed.body)).to.equal(200);
      expect(closed.body).to.deep.include({ status: 'closed', close_reason: 'Raised in error.', closed_by: { kind: 'api_key', name: 'Sponsor CTMS (API)' } });
      expect((await queriesOf('01-001')).find((q) => q.id === raised.body.id)).to.deep.equal(closed.body);
      const rows = (await auditOf('01-001')).filter((a) => a.details?.query_id === raised.body.id);
      expect(rows.map((a) => [a.action, a.author, a.field, a.new_value])).to.deep.equal([
        ['query.opened', 'Sponsor CTMS (API)', 'height', 'Height 165.5 cm: please check the unit.'],
        ['query.closed', 'Sponsor CTMS (API)', 'height', null],
      ]);
      expect(at(rows, 1).reason).to.equal('Data sent through the API key "Sponsor CTMS": Raised in error.');
    });

    it('a table cell of a saved row is a place too; a row the form does not hold is not', async () => {
      expect((await send(keys.lab, [{ subject: '01-001', visit: 'screening', form: 'mh', tables: { conditions: [{ term: 'Hypertension', ongoing: 'yes' }] } }]).then((results) => at(results, 0))).status).to.equal('ok');
      const cell = await raise(keys.lab, { subject: '01-001', visit: 'screening', form: 'mh', field: 'conditions[0].term', message: 'Onset date missing?' });
      expect(cell.status, JSON.stringify(cell.body)).to.equal(201);
      expect(cell.body.field).to.equal('conditions[0].term');
      const beyond = await raise(keys.lab, { subject: '01-001', visit: 'screening', form: 'mh', field: 'conditions[1].term', message: 'No such row.' });
      expect(problem(beyond)).to.deep.equal({ status: 422, code: 'query_place_unknown', pointers: ['/field'] });
    });
  });

  describe('refusals', () => {
    let siteOneQuery: Query;
    let blindedQuery: Query;

    before(async () => {
      const onSiteOne = await raise(world.key, { subject: '01-003', visit: 'screening', form: 'vs', field: 'hr', message: 'Heart rate: please confirm.' });
      expect(onSiteOne.status, JSON.stringify(onSiteOne.body)).to.equal(201);
      siteOneQuery = onSiteOne.body;
      const onBlinded = await raise(world.key, { subject: '01-001', visit: 'baseline', form: 'ip_alloc', field: 'kit', message: 'Kit number format?' });
      expect(onBlinded.status, JSON.stringify(onBlinded.body)).to.equal(201);
      blindedQuery = onBlinded.body;
    });

    it('a read-only key may not answer, raise or close (403 right_missing)', async () => {
      for (const res of [
        await answer(siteOneQuery.id, keys.readOnly, { text: 'x' }),
        await close(siteOneQuery.id, keys.readOnly, { reason: 'x' }),
        await raise(keys.readOnly, { subject: '01-001', visit: 'screening', form: 'dm', field: 'height', message: 'x' }),
      ]) expect(problem(res)).to.deep.equal({ status: 403, code: 'right_missing', pointers: [] });
    });

    it('another site\'s query answers exactly like one that does not exist (404 query_not_found)', async () => {
      const other = await answer(siteOneQuery.id, keys.siteTwo, { text: 'Seen.' });
      const none = await answer(987654, keys.siteTwo, { text: 'Seen.' });
      expect(problem(other)).to.deep.equal({ status: 404, code: 'query_not_found', pointers: [] });
      const shape = (res: Reply, id: number) => ({ ...refusal(res), request_id: '', detail: present(refusal(res).detail, 'the detail').replace(String(id), '<id>') });
      expect(shape(other, siteOneQuery.id)).to.deep.equal(shape(none, 987654));
      expect(problem(await close(siteOneQuery.id, keys.siteTwo, { reason: 'x' }))).to.deep.equal({ status: 404, code: 'query_not_found', pointers: [] });
      const otherSubject = await raise(keys.siteTwo, { subject: '01-003', visit: 'screening', form: 'vs', field: 'sbp', message: 'x' });
      expect(problem(otherSubject)).to.deep.equal({ status: 422, code: 'query_place_unknown', pointers: ['/subject'] });
      expect(firstMessage(otherSubject)).to.equal('There is no patient "01-003" at the sites of this API key.');
    });

    it('a query id beyond what the database can hold is a bad parameter (400), never a database error', async () => {
      const res = await answer(Number('1e30'), keys.lab, { text: 'x' });
      expect(problem(res)).to.deep.equal({ status: 400, code: 'invalid_parameter', pointers: ['/path/query_id'] });
    });

    it('a blinded key neither sees, answers nor raises a query on a form of the unblinded team', async () => {
      expect((await queriesOf('01-001', keys.blinded)).map((q) => q.id)).not.to.include(blindedQuery.id);
      expect(problem(await answer(blindedQuery.id, keys.blinded, { text: 'x' }))).to.deep.equal({ status: 404, code: 'query_not_found', pointers: [] });
      expect(problem(await close(blindedQuery.id, keys.blinded, { reason: 'x' }))).to.deep.equal({ status: 404, code: 'query_not_found', pointers: [] });
      const raised = await raise(keys.blinded, { subject: '01-001', visit: 'baseline', form: 'ip_alloc', field: 'arm', message: 'x' });
      expect(problem(raised)).to.deep.equal({ status: 422, code: 'query_place_unknown', pointers: ['/form'] });
      expect(firstMessage(raised)).to.equal('The study has no form "ip_alloc".');
    });

    it('empty or blank texts and a missing reason are refused (422 invalid_body), and nothing is written', async () => {
      const before = (await queriesOf('01-003')).find((q) => q.id === siteOneQuery.id);
      for (const [res, pointer] of [
        [await answer(siteOneQuery.id, keys.lab, { text: '' }), '/text'],
        [await answer(siteOneQuery.id, keys.lab, { text: '   ' }), '/text'],
        [await close(siteOneQuery.id, world.key, {}), '/reason'],
        [await close(siteOneQuery.id, world.key, { reason: ' \n' }), '/reason'],
        [await raise(keys.lab, { subject: '01-001', visit: 'screening', form: 'dm', field: 'height', message: '' }), '/message'],
      ] as const) expect(problem(res)).to.deep.equal({ status: 422, code: 'invalid_body', pointers: [pointer] });
      expect((await queriesOf('01-003')).find((q) => q.id === siteOneQuery.id)).to.deep.equal(before);
    });

    it('an unknown place names the member that is wrong (422 query_place_unknown)', async () => {
      const place = { subject: '01-001', visit: 'screening', form: 'dm', field: 'height', message: 'x' };
      for (const [change, pointer, message] of [
        [{ subject: '09-999' }, '/subject', 'There is no patient "09-999" at the sites of this API key.'],
        [{ visit: 'week99' }, '/visit', 'The study has no visit "week99".'],
        [{ form: 'nope' }, '/form', 'The study has no form "nope".'],
        [{ form: 'ae' }, '/form', 'Form "ae" is not planned at visit "screening".'],
        [{ instance: 2 }, '/instance', 'Visit "screening" does not repeat; instance must be 1.'],
        [{ form: 'lab_hem' }, '/form', 'Form "lab_hem" of visit "screening" (instance 1) is not saved yet; a query needs a saved value.'],
        [{ field: 'shoe_size' }, '/field', 'No such field on this form.'],
      ] as const) {
        const res = await raise(keys.lab, { ...place, ...change });
        expect(problem(res), JSON.stringify(change)).to.deep.equal({ status: 422, code: 'query_place_unknown', pointers: [pointer] });
        expect(firstMessage(res)).to.equal(message);
      }
    });

    it('a patient whose consent is withdrawn takes no step, as records are refused (422 consent_missing)', async () => {
      const query = await sbpQuery('01-002');
      await inTransaction(app.db.knex, (stores) => recordConsent(stores, operator, { study: 'DEMO', subject: '01-002', change: { withdrawn: '2026-03-05', dataUse: false } }));
      expect(problem(await raise(keys.lab, { subject: '01-002', visit: 'screening', form: 'vs', field: 'hr', message: 'x' })))
        .to.deep.equal({ status: 422, code: 'consent_missing', pointers: [] });
      expect(problem(await answer(query.id, keys.lab, { text: 'x' }))).to.deep.equal({ status: 422, code: 'consent_missing', pointers: [] });
    });

    it('an Idempotency-Key answers a retried answer once', async () => {
      const headers = { 'Idempotency-Key': 'answer-once-1' };
      const first = await answer(siteOneQuery.id, keys.lab, { text: 'Sent once, retried.' }, headers);
      const retry = await answer(siteOneQuery.id, keys.lab, { text: 'Sent once, retried.' }, headers);
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(retry.status).to.equal(201);
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(retry.body).to.deep.equal(first.body);
      const read = present((await queriesOf('01-003')).find((q) => q.id === siteOneQuery.id), `query ${siteOneQuery.id}`);
      expect(read.answers.filter((a) => a.text === 'Sent once, retried.')).to.have.length(1);
    });
  });
});
