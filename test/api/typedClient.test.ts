import { expect } from 'chai';
import {
  createSdxClient,
  incrementalLoader,
  memoryWatermarkStore,
  readPages,
  readRows,
  rowKey,
  sendFhirRecord,
  SdxApiError,
  withIdempotentRetries,
  unwrap,
  type DeprecationNotice,
  type Row,
  type Schemas,
  type SdxClient,
} from '../../clients/typescript/src/index.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import { startContractProxy, type ContractProxy } from '../helpers/contractProxy.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { at } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * The whole typical order of use (design → enrol → records → read back every page → incremental
 * loads → FHIR) through the typed client in clients/typescript, so the client cannot drift from the
 * service. Every request goes through Prism's validating proxy (the third-party contract check), and
 * the last test asserts Prism found no request or response that breaks spec/openapi.yaml.
 */
describe('the typed client (clients/typescript) through the contract proxy', () => {
  const { app, world } = useStudyWorld();
  let proxy: ContractProxy;
  let client: SdxClient;
  const path = (study: string) => ({ params: { path: { study_code: study } } });

  before(async () => {
    proxy = await startContractProxy(app.baseUrl);
    client = createSdxClient({ baseUrl: proxy.url, key: world.key });
  });
  after(() => proxy?.close());

  it('reads the study design, then gets 304 for its ETag', async () => {
    const first = await client.GET('/api/v1/studies/{study_code}', path(world.code));
    const design = unwrap(first);
    expect(design.study.code).to.equal(world.code);
    expect(design.sites.map((s) => s.number)).to.deep.equal(['01', '02']);
    const sbp = design.forms.find((f) => f.code === 'vs')?.fields.find((f) => f.code === 'sbp');
    expect(sbp).to.include({ type: 'integer', unit: 'mm[Hg]', min: 70, max: 220, required: true });
    const etag = first.response.headers.get('etag')!;
    const again = await client.GET('/api/v1/studies/{study_code}', { params: { path: { study_code: world.code }, header: { 'If-None-Match': etag } } });
    expect(again.response.status).to.equal(304);
    expect(again.data).to.equal(undefined);
  });

  it('enrols patients, and reports a taken subject as an SdxApiError with its code', async () => {
    const enrol = async (body: Schemas['PatientEnrolment']) => unwrap(await client.POST('/api/v1/studies/{study_code}/patients', { ...path(world.code), body }));
    expect(await enrol({ site: '01', sex: 'female', birth_year: 1968, enrolled_on: '2026-03-02' })).to.deep.equal({ subject: '01-001', site: '01' });
    expect(await enrol({ site: '01', sex: 'male', birth_year: 1975, enrolled_on: '2026-03-03' })).to.deep.equal({ subject: '01-002', site: '01' });
    expect(await enrol({ site: '02', sex: 'male', birth_year: 1980, enrolled_on: '2026-03-04', subject: '02-H7731' })).to.deep.equal({ subject: '02-H7731', site: '02' });
    const retry = await enrol({ site: '02', sex: 'male', birth_year: 1980, enrolled_on: '2026-03-04', subject: '02-H7731' }).catch((e: unknown) => e);
    expect(retry).to.be.instanceOf(SdxApiError);
    expect(retry).to.include({ status: 409, code: 'subject_taken' });
    // Consent is recorded by the site team in the portal, never through the API.
    for (const subject of ['01-001', '01-002', '02-H7731']) await giveConsent(app.db.knex, world.code, subject, '2026-02-01');
  });

  it('sends visit forms and gets one result per record, in order', async () => {
    const result = unwrap(await client.POST('/api/v1/studies/{study_code}/records', {
      ...path(world.code),
      body: {
        records: [
          { subject: '01-001', visit: 'screening', form: 'vs', values: { vsdate: '2026-02-16', sbp: '138', dbp: '86', hr: '72', weight: '81.5' } },
          { subject: '01-001', visit: 'baseline', form: 'vs', values: { vsdate: '2026-03-02', sbp: '232', dbp: '95', hr: '78' } },
          { subject: '01-002', visit: 'screening', form: 'vs', status: 'draft', values: { vsdate: '2026-02-17', sbp: '124' } },
          { subject: '02-H7731', visit: 'screening', form: 'vs', values: { vsdate: '2026-02-18', sbp: '128', dbp: '80', hr: '64' } },
          { subject: '01-001', visit: 'screening', form: 'vs', values: { vsdate: '2026-02-16', sbp: '140', dbp: '86', hr: '72' } },
        ],
      },
    }));
    expect(result.results.map((r) => [r.index, r.status, r.code])).to.deep.equal([
      [0, 'ok', 'saved'], [1, 'warn', 'saved_with_queries'], [2, 'warn', 'saved_as_draft'], [3, 'ok', 'saved'], [4, 'skip', 'already_filled'],
    ]);
    expect(at(result.results, 1).queries_opened).to.equal(1);
    expect(result.counts).to.deep.equal({ ok: 2, warn: 2, skip: 1, error: 0 });
  });

  it('reads every page back: readPages sends each next as after until next is null', async () => {
    const pages = [];
    for await (const page of readPages(client, world.code, 'records', { limit: 2 })) pages.push(page);
    expect(pages.length).to.be.at.least(2);
    expect(pages.at(-1)!.next).to.equal(null);
    const rows = pages.flatMap((p) => p.records);
    expect(rows.map((r) => [r.subject, r.visit, r.form, r.status, r.source])).to.deep.equal([
      ['01-001', 'screening', 'vs', 'complete', 'api'],
      ['01-001', 'baseline', 'vs', 'complete', 'api'],
      ['01-002', 'screening', 'vs', 'draft', 'api'],
      ['02-H7731', 'screening', 'vs', 'complete', 'api'],
    ]);
    expect(at(rows, 0).values).to.include({ sbp: '138', hr: '72' });
    const queries = [];
    for await (const query of readRows(client, world.code, 'queries', { status: 'open' })) queries.push(query);
    expect(queries.map((q) => [q.subject, q.visit, q.field, q.origin])).to.deep.equal([['01-001', 'baseline', 'sbp', 'range']]);
    const trail: Row<'audit'>[] = [];
    for await (const row of readRows(client, world.code, 'audit', { subject: '01-001', form: 'vs', limit: 2 })) trail.push(row);
    expect(trail.filter((r) => r.action === 'query.opened').map((r) => [r.visit, r.field])).to.deep.equal([['baseline', 'sbp']]);
    expect(trail.every((r, i) => i === 0 || r.position > at(trail, i - 1).position)).to.equal(true);
  });

  it('answers the automatic query, raises a query of its own and closes it, and reads both threads back', async () => {
    const open = await readRows(client, world.code, 'queries', { status: 'open', subject: '01-001' }).next();
    const automatic = open.value as Row<'queries'>;
    const answered = unwrap(await client.POST('/api/v1/studies/{study_code}/queries/{query_id}/answers', {
      params: { path: { study_code: world.code, query_id: automatic.id } }, body: { text: 'Confirmed against the source document.' },
    }));
    expect(answered).to.deep.include({ id: automatic.id, status: 'answered' });
    expect(answered.answers.map((a) => [a.text, a.author.kind])).to.deep.equal([['Confirmed against the source document.', 'api_key']]);
    const raised = unwrap(await client.POST('/api/v1/studies/{study_code}/queries', {
      ...path(world.code), body: { subject: '01-001', visit: 'screening', form: 'vs', field: 'weight', message: 'Weight 81.5 kg: was it measured without shoes?' },
    }));
    expect(raised).to.deep.include({ status: 'open', origin: 'manual', field: 'weight' });
    const closed = unwrap(await client.POST('/api/v1/studies/{study_code}/queries/{query_id}/close', {
      params: { path: { study_code: world.code, query_id: raised.id } }, body: { reason: 'Checked on the ward: without shoes.' },
    }));
    expect(closed).to.deep.include({ status: 'closed', close_reason: 'Checked on the ward: without shoes.' });
    const notAllowed = await client.POST('/api/v1/studies/{study_code}/queries/{query_id}/close', {
      params: { path: { study_code: world.code, query_id: raised.id } }, body: { reason: 'Again.' },
    });
    expect(() => unwrap(notAllowed)).to.throw(SdxApiError).with.property('code', 'query_closed');
    const trail: Row<'audit'>[] = [];
    for await (const row of readRows(client, world.code, 'audit', { subject: '01-001' })) trail.push(row);
    expect(trail.map((r) => r.action)).to.include.members(['query.answered', 'query.opened', 'query.closed']);
  });

  it('chains incremental loads on the stored watermark: upserts changed rows by id and deletes removed patients', async () => {
    const store = memoryWatermarkStore();
    const copy = new Map<string, Row<'records'>>();
    const loader = incrementalLoader(client, world.code, 'records', {
      store,
      filters: { limit: 2 },
      sink: {
        upsert: (rows) => rows.forEach((row) => copy.set(rowKey('records', row), row)),
        remove: (removals) => {
          const gone = new Set(removals.map((r) => r.subject));
          for (const [id, row] of copy) if (gone.has(row.subject)) copy.delete(id);
        },
      },
    });

    const full = await loader.run();
    expect(full).to.include({ since: undefined, rows: 4, removals: 0 });
    expect(store.value).to.equal(full.watermark);
    expect(copy.size).to.equal(4);

    const changes = unwrap(await client.POST('/api/v1/studies/{study_code}/records', {
      ...path(world.code),
      body: {
        records: [
          { subject: '01-001', visit: 'screening', form: 'vs', update: true, values: { hr: '75' } },
          { subject: '02-H7731', visit: 'baseline', form: 'vs', values: { vsdate: '2026-03-04', sbp: '126', dbp: '79', hr: '66' } },
        ],
      },
    }));
    expect(changes.counts).to.deep.equal({ ok: 2, warn: 0, skip: 0, error: 0 });
    const second = await loader.run();
    expect(second.since).to.equal(full.watermark);
    expect(second.rows).to.be.within(2, 6);
    expect(copy.size).to.equal(5);
    const screening = [...copy.values()].find((r) => r.subject === '01-001' && r.visit === 'screening')!;
    expect(screening.values).to.include({ hr: '75', sbp: '138' });

    await inTransaction(app.db.knex, (s) => recordConsent(s, operator, { study: world.code, subject: '01-002', change: { withdrawn: '2026-03-10', dataUse: true } }));
    const third = await loader.run();
    expect(third.since).to.equal(second.watermark);
    expect(third.removals).to.equal(1);
    expect([...copy.values()].map((r) => r.subject)).to.not.include('01-002');
    expect(copy.size).to.equal(4);
  });

  it('sends a FHIR Bundle for review and NDJSON to save, and reads the saved value back', async () => {
    const patient = { resourceType: 'Patient', id: 'p-1', gender: 'female', birthDate: '1968-05-14' };
    const heartRate = (id: string, value: number, when: string) => ({
      resourceType: 'Observation', id, status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
      subject: { reference: 'Patient/p-1' }, effectiveDateTime: when,
      valueQuantity: { value, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
    });
    const review = await sendFhirRecord(client, world.code, '01-001', {
      resourceType: 'Bundle', type: 'collection', entry: [{ resource: patient }, { resource: heartRate('hr-1', 70, '2026-03-30T08:05:00Z') }],
    });
    expect(review).to.include({ subject: '01-001', status: 'proposed', mode: 'review' });
    // The heart rate, and the date of the measurement in the form's date field.
    expect(review.items.map((i) => [i.form, i.field, i.visit, i.value, i.state])).to.have.deep.members([['vs', 'hr', 'week4', '70', 'new'], ['vs', 'vsdate', 'week4', '2026-03-30', 'new']]);
    expect(review.review_url).to.match(new RegExp(`/p/${world.code}/s/01-001/fhir/${review.number}$`));

    const ndjson = [patient, heartRate('hr-2', 68, '2026-03-30T08:05:00Z')].map((r) => JSON.stringify(r)).join('\n');
    const saved = await sendFhirRecord(client, world.code, '01-001', ndjson, 'save');
    expect(saved).to.include({ mode: 'save' });
    expect(saved.counts.saved).to.equal(2);
    const week4 = [];
    for await (const row of readRows(client, world.code, 'records', { subject: '01-001', visit: 'week4' })) week4.push(row);
    expect(week4.map((r) => [r.form, r.source, r.values.vsdate, r.values.hr])).to.deep.equal([['vs', 'fhir', '2026-03-30', '68']]);

    // What became of each import: listed by readRows, and the review read back whole with its items.
    const imports: Row<'fhir_imports'>[] = [];
    for await (const row of readRows(client, world.code, 'fhir_imports', { subject: '01-001', limit: 1 })) imports.push(row);
    expect(imports.map((i) => [i.number, i.mode, i.status])).to.deep.equal([[review.number, 'review', 'proposed'], [saved.number, 'save', 'saved']]);
    expect(rowKey('fhir_imports', imports[0]!)).to.equal(review.import);
    const readBack = unwrap(await client.GET('/api/v1/studies/{study_code}/fhir/{import_id}', { params: { path: { study_code: world.code, import_id: review.import } } }));
    expect(readBack.items.map((i) => [i.field, i.state])).to.have.deep.members([['hr', 'new'], ['vsdate', 'new']]);
  });

  describe('withIdempotentRetries: retries a write with one Idempotency-Key, so it is made once', () => {
    const bundle = {
      resourceType: 'Bundle' as const, type: 'collection' as const,
      entry: [{ resource: { resourceType: 'Patient' as const, id: 'p-1', gender: 'female' as const, birthDate: '1968-05-14' } }],
    };
    const importsOf = async (subject: string) => (await app.db.knex('fhir_imports as i').join('patients as p', 'p.id', 'i.patient_id')
      .where('p.subject', subject).count<{ n: string }[]>({ n: '*' })).at(0)?.n;

    it('sends a FHIR record again after its answer was lost, and gets the first answer back instead of a second import', async () => {
      const replayed: (string | null)[] = [];
      let lost = 0;
      const lossy = createSdxClient({
        baseUrl: proxy.url,
        key: world.key,
        fetch: async (request) => {
          const answer = await fetch(request);
          replayed.push(answer.headers.get('idempotent-replayed'));
          // The service committed and answered; the answer never reaches the client.
          if (lost++ === 0) throw new TypeError('fetch failed');
          return answer;
        },
      });
      const before = Number(await importsOf('01-001'));
      const waits: number[] = [];
      const result = await withIdempotentRetries(
        (key) => sendFhirRecord(lossy, world.code, '01-001', bundle, 'review', { idempotencyKey: key }),
        { sleep: (ms) => { waits.push(ms); return Promise.resolve(); } },
      );
      expect(waits).to.deep.equal([1000]);
      expect(replayed).to.deep.equal([null, 'true']);
      expect(Number(await importsOf('01-001'))).to.equal(before + 1);
      // A file with only the Patient maps no value, so its import needs no review (issue 19, point 6).
      expect(result).to.include({ subject: '01-001', number: before + 1, status: 'saved', needs_review: false });
    });

    it('waits out a 503 for its Retry-After, then sends the records call once', async () => {
      let refused = 0;
      const keys: (string | null)[] = [];
      const flaky = createSdxClient({
        baseUrl: proxy.url,
        key: world.key,
        fetch: async (request) => {
          keys.push(request.headers.get('idempotency-key'));
          if (refused++ > 0) return fetch(request);
          const problem = { type: 'about:blank', title: 'Service unavailable', status: 503, code: 'unavailable', detail: 'The database is not reachable; retry later.' };
          return new Response(JSON.stringify(problem), { status: 503, headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '5' } });
        },
      });
      const waits: number[] = [];
      const result = await withIdempotentRetries((key) => (async () => unwrap(await flaky.POST('/api/v1/studies/{study_code}/records', {
        params: { path: { study_code: world.code }, header: { 'Idempotency-Key': key } },
        body: { records: [{ subject: '01-001', visit: 'week12', form: 'vs', values: { vsdate: '2026-05-25', sbp: '127', dbp: '81', hr: '70' } }] },
      })))(), { sleep: (ms) => { waits.push(ms); return Promise.resolve(); } });
      expect(waits).to.deep.equal([5000]);
      expect(result.results.map((r) => [r.status, r.code])).to.deep.equal([['ok', 'saved']]);
      expect(keys).to.have.length(2);
      expect(keys[0]).to.be.a('string').and.equal(keys[1]);
    });

    it('throws a refusal a retry cannot mend at once, and one that outlasts the attempts after the last', async () => {
      let calls = 0;
      const unknown = await withIdempotentRetries((key) => {
        calls++;
        return sendFhirRecord(client, world.code, '01-999', bundle, 'review', { idempotencyKey: key });
      }, { sleep: () => Promise.resolve() }).catch((e: unknown) => e);
      expect(unknown).to.be.instanceOf(SdxApiError).and.include({ status: 422, code: 'unknown_subject' });
      expect(calls).to.equal(1);

      let tries = 0;
      const down = await withIdempotentRetries(() => {
        tries++;
        return Promise.reject(new TypeError('fetch failed'));
      }, { attempts: 3, sleep: () => Promise.resolve() }).catch((e: unknown) => e);
      expect(down).to.be.instanceOf(TypeError);
      expect(tries).to.equal(3);
    });
  });

  it('tells the integration when a call answers with Deprecation and Sunset (docs/versioning.md)', async () => {
    // No v1 call is deprecated yet, so the headers are added on the way back, as a deprecated call would send them.
    const notices: DeprecationNotice[] = [];
    const deprecated = createSdxClient({
      baseUrl: proxy.url,
      key: world.key,
      onDeprecation: (notice) => notices.push(notice),
      fetch: async (request) => {
        const answer = await fetch(request);
        const headers = new Headers(answer.headers);
        headers.set('Deprecation', '@1798761600');
        headers.set('Sunset', 'Sat, 01 Jan 2028 00:00:00 GMT');
        return new Response(answer.body, { status: answer.status, headers });
      },
    });
    unwrap(await deprecated.GET('/api/v1/studies/{study_code}', path(world.code)));
    expect(notices).to.deep.equal([{
      method: 'GET', url: `${proxy.url}/api/v1/studies/${world.code}`, deprecation: '@1798761600', sunset: 'Sat, 01 Jan 2028 00:00:00 GMT', link: undefined,
    }]);
    unwrap(await client.GET('/api/v1/studies/{study_code}', path(world.code)));
    expect(notices, 'a call without the headers is not reported').to.have.length(1);
  });

  it('went through the contract proxy for every call, and it found no request or response that breaks the spec', () => {
    expect(proxy.requests).to.be.at.least(15);
    expect(proxy.violations).to.deep.equal([]);
  });
});
