import { AssertionError, expect } from 'chai';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import { demoDesign, giveConsent, operator } from '../helpers/factories.js';
import { requireOtherFilesScanned, scanResponse } from '../helpers/responseScan.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * Read calls never return a patient's birth year or hospital identity, the private attributes a patient
 * has (spec, "Reading data"). Every answer any test file receives is scanned for members the spec does
 * not list (test/helpers/responseScan.ts); this file proves the scan works, reads its own patients'
 * private values through every read call, and has the root hook check at the end of the run that other
 * files' answers were scanned too, so it fails when run without them.
 */

/** Every string and number in a JSON value. */
function leaves(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(leaves);
  return [value];
}


/** A page of any of the four reads (or its refusal), as the scan reads it: `next` when there is another page. */
type ReadPage = Record<string, unknown> & { next?: string | null };
describe('privacy of the read calls (with every answer of the run scanned)', () => {
  // First, as before: the end-of-run check then knows of this file even when the set-up below fails.
  before(function () {
    requireOtherFilesScanned(this.test!.file!);
  });
  const { app, world } = useStudyWorld({ design: demoDesign('PRIV') });
  // Characters outside base64url in the identifier, so no page token can contain it by chance.
  const own = { identity: [{ system: 'urn:oid:1.2.643.100.3', value: 'MRN~7364~PRIV' }], birthYear: 1907 };

  before(async () => {
    const subjects: string[] = [];
    for (const site of ['01', '01', '02']) {
      const res = await app.call<AnswerOf<'createPatient', 201>>('POST', '/api/v1/studies/PRIV/patients', { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-02' } });
      expect(res.status).to.equal(201);
      subjects.push(res.body.subject);
      await giveConsent(app.db.knex, 'PRIV', res.body.subject);
    }
    const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', '/api/v1/studies/PRIV/records', {
      key: world.key,
      body: { records: subjects.map((subject) => ({ subject, visit: 'screening', form: 'vs', values: { vsdate: '2025-12-15', sbp: '240', dbp: '80', hr: '70' } })) },
    });
    expect(sent.body.counts.warn).to.equal(3);
    // The hospital identity is linked by a confirmed FHIR import; set here, it is the same column's value.
    await app.db.knex('patients').update({ fhir_identity: JSON.stringify(own.identity), birth_year: own.birthYear });
  });

  it('returns no private attribute in any read call, filter, page, language or removal', async () => {
    const knex = app.db.knex;
    const base = '/api/v1/studies/PRIV';
    const watermark = (await app.call<AnswerOf<'listPatients', 200>>('GET', `${base}/patients`, { key: world.key })).body.watermark;
    await inTransaction(knex, (s) => recordConsent(s, operator, { study: 'PRIV', subject: '01-002', change: { withdrawn: '2026-02-01', dataUse: true } }));
    const pages: Record<string, unknown>[] = [];
    const answers: string[] = [];
    const read = async (path: string) => {
      const res = await app.call<ReadPage>('GET', path, { key: world.key });
      expect(res.status).to.be.oneOf([200, 400]);
      answers.push(JSON.stringify(res.body));
      if (res.status === 200) pages.push(res.body);
      return res;
    };
    for (const call of ['patients', 'records', 'queries', 'audit']) {
      for (const query of ['', '?limit=1', '?site=01', '?subject=01-001', `?updated_since=${watermark}`, '?lang=ru', '?status=open', '?site=99', '?email=x']) {
        const res = await read(`${base}/${call}${query}`);
        if (res.body.next) await read(`${base}/${call}${query}${query ? '&' : '?'}after=${res.body.next}`);
      }
    }
    // The scan looked at pages that carry these patients and their removal, not at empty answers.
    expect(pages.flatMap((p) => (p.patients ?? []) as { subject: string }[]).map((r) => r.subject)).to.include.members(['01-001', '02-001']);
    expect(pages.flatMap((p) => (p.audit ?? []) as { subject: string }[]).map((r) => r.subject)).to.include.members(['01-001', '02-001']);
    expect(pages.flatMap((p) => p.removed as { subject: string }[]).map((r) => r.subject)).to.include('01-002');
    for (const text of answers) {
      expect(text, text).to.not.include(own.identity[0]?.value);
    }
    for (const page of pages) {
      expect(leaves(page), 'birth year').to.not.include.oneOf([own.birthYear, String(own.birthYear)]);
    }
  });

  it('the scan of every answer refuses a read page row with a private attribute, and leaves the portal\'s pages to the site team', () => {
    const page = (row: object) => JSON.stringify({ patients: [row], next: null, watermark: '2026-03-21T08:00:00.000Z', removed: [] });
    const row = { subject: '01-001', site: '01', sex: 'female', enrolled_on: '2026-01-02', status: 'enrolled', updated_at: '2026-03-21T08:00:00.000Z' };
    for (const [member, value] of Object.entries({ birth_year: own.birthYear, fhir_identity: own.identity })) {
      expect(() => scanResponse('GET /leaky', 'application/json', page({ ...row, [member]: value })), member).to.throw(AssertionError, new RegExp(`patients row: ${member}`));
    }
    // The portal's HTML pages are for the site team, who may see these values.
    expect(() => scanResponse('GET /p/PRIV/patients/01-001', 'text/html; charset=utf-8', page({ ...row, fhir_identity: own.identity }))).to.not.throw();
  });

  it('the scan of every answer refuses a read page with a member the spec does not list', () => {
    const page = (rows: object[], more: object = {}) => JSON.stringify({ patients: rows, next: null, watermark: '2026-03-21T08:00:00.000Z', removed: [], ...more });
    const row = { subject: '01-001', site: '01', sex: 'female', enrolled_on: '2026-01-02', status: 'enrolled', updated_at: '2026-03-21T08:00:00.000Z' };
    expect(() => scanResponse('GET /patients', 'application/json', page([row]))).to.not.throw();
    expect(() => scanResponse('GET /patients', 'application/json', page([{ ...row, birth_year: 1960 }]))).to.throw(AssertionError, /patients row: birth_year/);
    expect(() => scanResponse('GET /patients', 'application/json', page([row], { total: 1 }))).to.throw(AssertionError, /page: total/);
    expect(() => scanResponse('GET /patients', 'application/json', page([row], { removed: [{ subject: '01-002', site: '01', reason: 'x', removed_at: 'y', sex: 'male' }] })))
      .to.throw(AssertionError, /removal: sex/);
  });
});
