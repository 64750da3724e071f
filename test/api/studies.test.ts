import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import { addPerson, createStudyWorld, demoDesign, makeKey, operator } from '../helpers/factories.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** The demo design file as written, read without our parser, so the design call is compared with the file itself. */
const demoFile = yaml.load(readFileSync('studies/demo.yaml', 'utf8')) as {
  forms: { code: string; name: string; team?: string; fields: Record<string, unknown>[] }[];
};

/** A field (or column) of the file as the design call must show it: every member present, null where it does not apply. */
function wireField(f: Record<string, unknown>, column = false): Record<string, unknown> {
  const out: Record<string, unknown> = {
    code: f.code, label: f.label, type: f.type, unit: f.unit ?? null, min: f.min ?? null, max: f.max ?? null,
    decimals: f.decimals ?? null, options: f.options ?? null, required: f.required ?? false,
  };
  if (!column) out.columns = f.columns ? (f.columns as Record<string, unknown>[]).map((c) => wireField(c, true)) : null;
  return out;
}

const DEMO_VISITS = [
  { code: 'screening', name: 'Screening', order: 1, repeating: false, planned_day: -14, window_before: 14, window_after: 0, forms: ['dm', 'vs', 'lab_hem', 'lab_chem', 'mh', 'cm'] },
  { code: 'baseline', name: 'Baseline (randomisation)', order: 2, repeating: false, planned_day: 0, window_before: 0, window_after: 3, forms: ['vs', 'lab_hem', 'lab_chem', 'ip_alloc'] },
  { code: 'week4', name: 'Week 4', order: 3, repeating: false, planned_day: 28, window_before: 7, window_after: 7, forms: ['vs', 'lab_chem', 'ae', 'cm'] },
  { code: 'week12', name: 'Week 12 (end of treatment)', order: 4, repeating: false, planned_day: 84, window_before: 7, window_after: 7, forms: ['vs', 'lab_hem', 'lab_chem', 'ae', 'cm'] },
  { code: 'unscheduled', name: 'Unscheduled visit', order: 5, repeating: true, planned_day: null, window_before: 0, window_after: 0, forms: ['vs', 'ae'] },
];

const DEMO_CHECKS = [
  { code: 'dbp_below_sbp', form: 'vs', field: 'dbp', message: 'Diastolic pressure must be below systolic pressure', action: 'query' },
  { code: 'hct_plausible_for_hgb', form: 'lab_hem', field: 'hct', message: 'Haematocrit is implausible for the haemoglobin (expected about three times the haemoglobin in g/dL)', action: 'query' },
  { code: 'vsdate_with_values', form: 'vs', field: 'vsdate', message: 'Enter the date of the measurements', action: 'reject' },
];

type Design = AnswerOf<'getStudyDesign', 200>;

describe('getStudyDesign', () => {
  const { app, world } = useStudyWorld();
  let blindedKey: string;
  let site02Key: string;
  let readOnlyKey: string;
  let writeOnlyKey: string;
  let otherStudyKey: string;
  const path = () => `/api/v1/studies/${world.code}`;

  before(async () => {
    await addPerson(app.db.knex, world.code, 'blinded-manager@sdx.test', { role: 'manager', canExport: true, unblinded: false });
    blindedKey = (await makeKey(app.db.knex, { study: world.code, by: 'blinded-manager@sdx.test', name: 'Blinded LIMS' })).key;
    site02Key = (await makeKey(app.db.knex, { study: world.code, by: world.manager, sites: ['02'] })).key;
    readOnlyKey = (await makeKey(app.db.knex, { study: world.code, by: world.manager, canWrite: false, canEnrol: false })).key;
    writeOnlyKey = (await makeKey(app.db.knex, { study: world.code, by: world.manager, canRead: false, canEnrol: false })).key;
    otherStudyKey = (await createStudyWorld(app.db.knex, demoDesign('OTHER'))).key;
  });

  it('returns the study, the key\'s sites, the visits in order and every form with its fields exactly as in the design file', async () => {
    const res = await app.call<Design>('GET', path(), { key: world.key });
    expect(res.status).to.equal(200);
    expect(res.body.study).to.deep.equal({
      code: 'DEMO', name: 'Demo: Hypertension add-on therapy, phase II', blinded: true, consent_required: true,
      enrolment_open: true, locked: false, subject_format: '{site}-{seq:3}', reason_required_on_update: false,
    });
    expect(res.body.sites).to.deep.equal([{ number: '01', name: 'City Hospital' }, { number: '02', name: 'Regional Clinic' }]);
    expect(res.body.visits).to.deep.equal(DEMO_VISITS);
    expect(res.body.forms).to.deep.equal(demoFile.forms.map((f) => ({ code: f.code, name: f.name, team: f.team ?? 'all', fields: f.fields.map((x) => wireField(x)) })));
    expect(res.body.edit_checks).to.deep.equal(DEMO_CHECKS);
  });

  it('shows a field\'s unit, range, decimals, options and table columns (spot checks against the file)', async () => {
    const res = await app.call<Design>('GET', path(), { key: world.key });
    const field = (form: string, code: string) =>
      present(present(res.body.forms.find((f) => f.code === form), `form ${form}`).fields.find((f) => f.code === code), `field ${form}.${code}`);
    expect(field('vs', 'sbp')).to.deep.equal({ code: 'sbp', label: 'Systolic blood pressure', type: 'integer', unit: 'mm[Hg]', min: 70, max: 220, decimals: null, options: null, required: true, columns: null });
    expect(field('dm', 'height')).to.include({ type: 'decimal', unit: 'cm', min: 100, max: 250, decimals: 1 });
    expect(field('dm', 'sex').options).to.deep.equal([{ code: '1', label: 'Female' }, { code: '2', label: 'Male' }]);
    expect(field('ae', 'events').columns?.map((c) => [c.code, c.type, c.required]))
      .to.deep.equal([['term', 'text', true], ['onset', 'date', true], ['severity', 'choice', true], ['serious', 'yesno', true]]);
    expect(at(present(field('ae', 'events').columns, 'the columns of events'), 2).options?.map((o) => o.code)).to.deep.equal(['mild', 'moderate', 'severe']);
  });

  it('hides the unblinded team\'s form, its visit slots and its edit checks from a key whose maker is blinded', async () => {
    const res = await app.call<Design>('GET', path(), { key: blindedKey });
    expect(res.status).to.equal(200);
    expect(res.body.forms.map((f) => f.code)).to.deep.equal(['dm', 'vs', 'lab_hem', 'lab_chem', 'mh', 'cm', 'ae']);
    expect(at(res.body.visits, 1).forms).to.deep.equal(['vs', 'lab_hem', 'lab_chem']);
    expect(JSON.stringify(res.body)).not.to.include('ip_alloc');
    const unblinded = await app.call<Design>('GET', path(), { key: world.key });
    expect(unblinded.body.forms.find((f) => f.code === 'ip_alloc')).to.deep.include({ team: 'unblinded' });
  });

  it('lists only the key\'s own sites', async () => {
    const res = await app.call<Design>('GET', path(), { key: site02Key });
    expect(res.status).to.equal(200);
    expect(res.body.sites).to.deep.equal([{ number: '02', name: 'Regional Clinic' }]);
  });

  it('shows every field type the format has: time, multichoice, yes/no and numeric table columns with units and ranges', async () => {
    const design = demoDesign('TYPES', (d) => {
      d.blinded = false;
      d.forms.push({
        code: 'dosing', name: 'Dosing', team: 'all', fields: [
          { code: 'dose_time', label: 'Time of dose', type: 'time', required: true },
          { code: 'routes', label: 'Routes', type: 'multichoice', required: false, options: [{ code: 'po', label: 'Oral' }, { code: 'iv', label: 'Intravenous' }] },
          { code: 'fasting', label: 'Fasting', type: 'yesno', required: false },
          {
            code: 'doses', label: 'Doses', type: 'table', required: false, columns: [
              { code: 'amount', label: 'Amount', type: 'decimal', unit: 'mg', min: 0, max: 500, decimals: 2, required: true },
              { code: 'count', label: 'Tablets', type: 'integer', min: 1, max: 4, required: false },
            ],
          },
        ],
      });
      at(d.visits, 0).forms.push('dosing');
    });
    const types = await createStudyWorld(app.db.knex, design);
    const res = await app.call<Design>('GET', `/api/v1/studies/${types.code}`, { key: types.key });
    expect(res.status).to.equal(200);
    expect(res.body.study.blinded).to.equal(false);
    expect(res.body.forms.find((f) => f.code === 'dosing')?.fields).to.deep.equal([
      { code: 'dose_time', label: 'Time of dose', type: 'time', unit: null, min: null, max: null, decimals: null, options: null, required: true, columns: null },
      { code: 'routes', label: 'Routes', type: 'multichoice', unit: null, min: null, max: null, decimals: null, options: [{ code: 'po', label: 'Oral' }, { code: 'iv', label: 'Intravenous' }], required: false, columns: null },
      { code: 'fasting', label: 'Fasting', type: 'yesno', unit: null, min: null, max: null, decimals: null, options: null, required: false, columns: null },
      {
        code: 'doses', label: 'Doses', type: 'table', unit: null, min: null, max: null, decimals: null, options: null, required: false, columns: [
          { code: 'amount', label: 'Amount', type: 'decimal', unit: 'mg', min: 0, max: 500, decimals: 2, options: null, required: true },
          { code: 'count', label: 'Tablets', type: 'integer', unit: null, min: 1, max: 4, decimals: null, options: null, required: false },
        ],
      },
    ]);
    expect(at(res.body.visits, 0).forms).to.include('dosing');
  });

  it('answers with an ETag, and 304 without a body to a matching If-None-Match', async () => {
    const first = await app.call<Design>('GET', path(), { key: world.key });
    const etag = present(first.headers.get('etag'), 'the ETag');
    expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
    const again = await app.call<string>('GET', path(), { key: world.key, headers: { 'if-none-match': etag } });
    expect(again.status).to.equal(304);
    expect(again.body).to.equal('');
    expect(again.headers.get('etag')).to.equal(etag);
    for (const header of [`"other", ${etag}`, `W/${etag}`, '*']) {
      expect((await app.call<Design>('GET', path(), { key: world.key, headers: { 'if-none-match': header } })).status, header).to.equal(304);
    }
    const stale = await app.call<Design>('GET', path(), { key: world.key, headers: { 'if-none-match': '"stale"' } });
    expect(stale.status).to.equal(200);
    expect(stale.body).to.deep.equal(first.body);
  });

  it('gives the same ETag in every language, and another one per view of the design (sites, blinding)', async () => {
    const en = await app.call<Design>('GET', path(), { key: world.key });
    const ru = await app.call<Design>('GET', `${path()}?lang=ru`, { key: world.key });
    expect(ru.status).to.equal(200);
    expect(ru.body).to.deep.equal(en.body);
    expect(ru.headers.get('etag')).to.equal(en.headers.get('etag'));
    const blinded = await app.call<Design>('GET', path(), { key: blindedKey });
    const site02 = await app.call<Design>('GET', path(), { key: site02Key });
    const tags = new Set([en, blinded, site02].map((r) => r.headers.get('etag')));
    expect(tags.size).to.equal(3);
    const notModified = await app.call<Design>('GET', path(), { key: blindedKey, headers: { 'if-none-match': present(en.headers.get('etag'), 'the ETag') } });
    expect(notModified.status).to.equal(200);
  });

  it('changes the ETag when the study changes (enrolment closed), and 304 no longer applies', async () => {
    const before = await app.call<Design>('GET', path(), { key: world.key });
    await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { enrolmentOpen: false }));
    try {
      const after = await app.call<Design>('GET', path(), { key: world.key, headers: { 'if-none-match': present(before.headers.get('etag'), 'the ETag') } });
      expect(after.status).to.equal(200);
      expect(after.body.study.enrolment_open).to.equal(false);
      expect(after.headers.get('etag')).not.to.equal(before.headers.get('etag'));
    } finally {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { enrolmentOpen: true }));
    }
  });

  it('serves a read-only key and a write-only key alike', async () => {
    for (const key of [readOnlyKey, writeOnlyKey]) {
      const res = await app.call<Design>('GET', path(), { key });
      expect(res.status).to.equal(200);
      expect(res.body.study.code).to.equal('DEMO');
    }
  });

  it('refuses without a key (401), for another study (404), with the API switched off (403) and with an unknown parameter (400)', async () => {
    const none = await app.call<Problem>('GET', path());
    expect(none.status).to.equal(401);
    expect(none.body.code).to.equal('key_missing');
    const other = await app.call<Problem>('GET', path(), { key: otherStudyKey });
    expect(other.status).to.equal(404);
    expect(other.body.code).to.equal('study_not_found');
    const unknown = await app.call<Problem>('GET', `${path()}?vesion=2`, { key: world.key });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.errors).to.deep.equal([{ pointer: '/query/vesion', code: 'unknown_parameter', message: 'Unknown parameter "vesion".' }]);
    await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { apiEnabled: false }));
    try {
      const off = await app.call<Problem>('GET', path(), { key: world.key });
      expect(off.status).to.equal(403);
      expect(off.body.code).to.equal('api_disabled');
    } finally {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { apiEnabled: true }));
    }
  });
});
