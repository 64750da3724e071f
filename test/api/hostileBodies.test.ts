import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import fc from 'fast-check';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import type { StudyWorld } from '../helpers/factories.js';
import { expectNoFault, footprint, runs, startHostileWorld } from '../helpers/hostileInput.js';
import { at } from '../helpers/only.js';
import type { TestApp } from '../helpers/testApp.js';

/**
 * Request bodies hostile at the level of bytes, sent to every call that takes one: deep nesting, huge
 * strings and many members, wrong content types, bytes that are not UTF-8, truncated JSON, content
 * codings. Each is a clear 4xx problem (or, for data that is merely large, an ordinary answer), never a
 * 5xx, and a refusal writes nothing.
 */

/** A call that takes a body: its path, a valid body, and the problem code of a body that is not JSON. */
interface BodyCall {
  operationId: 'createPatient' | 'submitFormRecords' | 'importFhirRecord';
  path: string;
  valid: () => object;
  notJson: string;
  contentType: string;
}

const MB = 1024 * 1024;
const DEPTH = 100_000;
/** A valid FHIR resource of the test patient (female, born 1970, enrolled 2026-03-09). */
const OBSERVATION = {
  resourceType: 'Observation', id: 'hr', status: 'final', effectiveDateTime: '2026-03-09T09:40:00+03:00',
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
  valueQuantity: { value: 76, system: 'http://unitsofmeasure.org', code: '/min' },
};

describe('hostile input: request bodies', function () {
  this.timeout(120_000);
  let app: TestApp;
  let world: StudyWorld;
  let subject: string;
  /** Each call that takes a body: enrolment, records, FHIR. */
  let calls: [BodyCall, BodyCall, BodyCall];

  before(async () => {
    ({ app, world, subject } = await startHostileWorld());
    const studyPath = `/api/v1/studies/${world.code}`;
    calls = [
      { operationId: 'createPatient', path: `${studyPath}/patients`, valid: () => ({ site: '01', sex: 'male', birth_year: 1980, enrolled_on: '2026-03-09' }), notJson: 'invalid_body', contentType: 'application/json' },
      {
        operationId: 'submitFormRecords', path: `${studyPath}/records`, notJson: 'invalid_body', contentType: 'application/json',
        valid: () => ({ records: [{ subject, visit: 'week4', form: 'cm', update: true, tables: { medications: [{ name: 'Aspirin' }] } }] }),
      },
      { operationId: 'importFhirRecord', path: `${studyPath}/fhir?subject=${subject}`, valid: () => OBSERVATION, notJson: 'fhir_not_fhir', contentType: 'application/fhir+json' },
    ];
  });
  after(() => app.close());

  /** Sends a raw body and checks the invariants of a refusal: no fault, the expected status and code, no row written. */
  async function expectRefused(path: string, raw: string | Buffer, options: { contentType: string; headers?: Record<string, string> }, status: number, code: string) {
    const before = await footprint(app.db.knex);
    const res = await app.call<Problem>('POST', path, { key: world.key, raw, ...options });
    expectNoFault(res, `${path} ${String(raw).slice(0, 80)}`);
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(status);
    expect(res.body.code).to.equal(code);
    expect(await footprint(app.db.knex), 'a refusal wrote rows').to.deep.equal(before);
    return res.body;
  }

  describe('nesting, size and members', () => {
    for (const [name, open, close] of [['arrays', '[', ']'], ['objects', '{"a":', '}']] as const) {
      it(`refuses ${DEPTH} levels of unclosed ${name} as not JSON, on every call`, async () => {
        for (const c of calls) await expectRefused(c.path, open.repeat(DEPTH), { contentType: c.contentType }, 422, c.notJson);
      });
      it(`refuses ${DEPTH} levels of closed ${name} where a member belongs with 422, on every call`, async () => {
        const deep = `${open.repeat(DEPTH)}1${close.repeat(DEPTH)}`;
        const bodies: Record<BodyCall['operationId'], string> = {
          createPatient: `{"site":${deep},"sex":"male","birth_year":1980,"enrolled_on":"2026-03-09"}`,
          submitFormRecords: `{"records":[{"subject":"${subject}","visit":"week4","form":"cm","tables":${deep}}]}`,
          importFhirRecord: `{"resourceType":"Observation","status":"final","code":{"text":"x"},"note":${deep}}`,
        };
        for (const c of calls) await expectRefused(c.path, bodies[c.operationId], { contentType: c.contentType }, 422, c.notJson);
      });
    }

    it('refuses deep nesting on an NDJSON line with 422 fhir_not_fhir', async () => {
      const line = `{"resourceType":"Basic","code":{"text":"x"},"x":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`;
      const body = await expectRefused(calls[2].path, `${JSON.stringify(OBSERVATION)}\n${line}`, { contentType: 'application/fhir+ndjson' }, 422, 'fhir_not_fhir');
      expect(body.detail).to.include('nests deeper than 64 levels');
    });

    it('refuses a 4.9 MB string where the schema allows 4000 characters, naming the member', async () => {
      const body = await expectRefused(calls[1].path, JSON.stringify({ records: [{ subject, visit: 'baseline', form: 'ip_alloc', values: { kit: 'x'.repeat(4.9 * MB) } }] }),
        { contentType: 'application/json' }, 422, 'invalid_body');
      expect(body.errors?.map((e) => e.pointer)).to.deep.equal(['/records/0/values/kit']);
    });

    it('takes a FHIR resource with a 4.9 MB string and 100,000 unknown members as data (201), within the 5 MB limit', async () => {
      for (const resource of [
        { ...OBSERVATION, code: { ...OBSERVATION.code, text: 'x'.repeat(4.9 * MB) } },
        { ...OBSERVATION, ...Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 1])) },
      ]) {
        const res = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', calls[2].path, { key: world.key, raw: JSON.stringify(resource), contentType: 'application/fhir+json' });
        expectNoFault(res);
        expect(res.status).to.equal(201);
        expect(res.body.items.map((i) => [i.field, i.value])).to.deep.include(['hr', '76']);
      }
    });

    it('answers a record with 20,000 unknown fields with one error per field, saving nothing', async () => {
      const before = await footprint(app.db.knex);
      const values = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`f${i}`, '1']));
      const res = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', calls[1].path, { key: world.key, body: { records: [{ subject, visit: 'screening', form: 'vs', values }] } });
      expectNoFault(res);
      expect(at(res.body.results, 0)).to.include({ status: 'error', code: 'unknown_field' });
      expect(at(res.body.results, 0).errors).to.have.length(20_000);
      expect(await footprint(app.db.knex)).to.deep.equal(before);
    });

    it('refuses `__proto__` members as not JSON rather than letting them reach the rules', async () => {
      await expectRefused(calls[1].path, `{"records":[{"subject":"${subject}","visit":"screening","form":"vs","values":{"__proto__":{"sbp":"1"}}}]}`, { contentType: 'application/json' }, 422, 'invalid_body');
      await expectRefused(calls[2].path, '{"resourceType":"Patient","\\u005f_proto__":{}}', { contentType: 'application/fhir+json' }, 422, 'fhir_not_fhir');
    });
  });

  describe('content types', () => {
    for (const type of ['text/plain', 'application/xml', 'application/fhir+xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/json-patch+json']) {
      it(`refuses ${type} with 415 unsupported_media_type on every call`, async () => {
        for (const c of calls) {
          const body = await expectRefused(c.path, JSON.stringify(c.valid()), { contentType: type }, 415, 'unsupported_media_type');
          expect(body.detail).to.include(type.split(';')[0]);
        }
      });
    }

    it('refuses NDJSON sent to the records and enrolment calls, and JSON types each call does not declare', async () => {
      await expectRefused(calls[1].path, JSON.stringify(calls[1].valid()), { contentType: 'application/fhir+ndjson' }, 415, 'unsupported_media_type');
      await expectRefused(calls[0].path, JSON.stringify(calls[0].valid()), { contentType: 'application/fhir+json' }, 415, 'unsupported_media_type');
    });

    it('takes `application/json; charset=utf-8` and a UTF-8 byte order mark', async () => {
      const res = await app.call('POST', calls[1].path, { key: world.key, raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(calls[1].valid()))]), contentType: 'application/json; charset=utf-8' });
      expectNoFault(res);
      expect(res.status).to.equal(200);
    });
  });

  describe('bytes that are not UTF-8', () => {
    const BROKEN: [string, number[]][] = [
      ['a byte that never occurs (FF)', [0xff]],
      ['a lone continuation byte (80)', [0x80]],
      ['an overlong encoding of "/" (C0 AF)', [0xc0, 0xaf]],
      ['an encoded surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
      ['a sequence cut short (E2 82)', [0xe2, 0x82]],
      ['Latin-1 text (Zürich)', [0x5a, 0xfc, 0x72, 0x69, 0x63, 0x68]],
    ];
    for (const [name, bytes] of BROKEN) {
      it(`refuses ${name} inside a string, on every call and as NDJSON, rather than storing U+FFFD`, async () => {
        const inside = (json: string, member: string) => {
          const at = json.indexOf(member) + member.length;
          return Buffer.concat([Buffer.from(json.slice(0, at)), Buffer.from(bytes), Buffer.from(json.slice(at))]);
        };
        const records = await expectRefused(calls[1].path, inside(JSON.stringify(calls[1].valid()), '"name":"'), { contentType: 'application/json' }, 422, 'invalid_body');
        expect(records.errors).to.deep.equal([{ pointer: '', code: 'invalid_utf8', message: 'The body is not UTF-8 text (JSON is always UTF-8).' }]);
        await expectRefused(calls[0].path, inside(JSON.stringify(calls[0].valid()), '"site":"'), { contentType: 'application/json' }, 422, 'invalid_body');
        for (const contentType of ['application/fhir+json', 'application/fhir+ndjson']) {
          const fhir = await expectRefused(calls[2].path, inside(JSON.stringify(OBSERVATION), '"display":"'), { contentType }, 422, 'fhir_not_fhir');
          expect(fhir.detail).to.include('the body is not UTF-8 text');
        }
      });
    }
  });

  describe('truncated JSON', () => {
    it('refuses every proper prefix of a valid body as not JSON, on every call, writing nothing', async () => {
      await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), async (which, fraction) => {
        const c = at(calls, which);
        const text = JSON.stringify(c.valid());
        const cut = Math.floor(fraction * text.length);
        // Only a prefix that is itself JSON ("" is not sent as a body) could be taken: none of these is.
        await expectRefused(c.path, text.slice(0, Math.max(cut, 1)), { contentType: c.contentType }, 422, c.notJson);
      }), runs(60));
    });
  });

  describe('content codings', () => {
    const codings: [string, (b: Buffer) => Buffer][] = [['gzip', gzipSync], ['deflate', deflateSync], ['br', brotliCompressSync]];
    for (const [coding, compress] of codings) {
      it(`takes a ${coding} body, and refuses one that is not ${coding} data with 422, writing nothing`, async () => {
        const valid = Buffer.from(JSON.stringify(calls[1].valid()));
        const res = await app.call('POST', calls[1].path, { key: world.key, raw: compress(valid), headers: { 'content-encoding': coding } });
        expectNoFault(res);
        expect(res.status).to.equal(200);
        const body = await expectRefused(calls[1].path, valid, { contentType: 'application/json', headers: { 'content-encoding': coding } }, 422, 'invalid_body');
        expect(body.errors?.map((e) => e.code)).to.deep.equal(['invalid_content_coding']);
        await expectRefused(calls[2].path, Buffer.from(JSON.stringify(OBSERVATION)), { contentType: 'application/fhir+json', headers: { 'content-encoding': coding } }, 422, 'fhir_not_fhir');
      });
    }

    it('refuses a small compressed body that inflates past 5 MB with 413, writing nothing', async () => {
      const bomb = gzipSync(Buffer.concat([Buffer.from('{"records":['), Buffer.alloc(6 * MB, ' '), Buffer.from(']}')]));
      expect(bomb.length).to.be.below(64 * 1024);
      await expectRefused(calls[1].path, bomb, { contentType: 'application/json', headers: { 'content-encoding': 'gzip' } }, 413, 'payload_too_large');
    });

    it('refuses an unknown content coding with 415 naming it', async () => {
      for (const coding of ['compress', 'gzip, br', 'x-custom']) {
        const body = await expectRefused(calls[1].path, JSON.stringify(calls[1].valid()), { contentType: 'application/json', headers: { 'content-encoding': coding } }, 415, 'unsupported_media_type');
        expect(body.detail).to.equal(`This call does not accept the content coding "${coding}": send the body as it is, or compressed with gzip, deflate or br.`);
      }
    });
  });
});
