import { expect } from 'chai';
import { giveConsent, makeKey } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** A section of the card (by its id) as text without tags. */
function section(page: PortalReply, id: string): string {
  const found = new RegExp(`<section id="${id}">([\\s\\S]*?)</section>`).exec(page.html);
  expect(found, `section ${id}`).to.not.equal(null);
  return present(found?.[1], `section ${id}`).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

describe('staff portal: the patient card', () => {
  const { app, world } = useStudyWorld();
  let subject: string;
  let staff: PortalClient;
  /** A key whose name needs escaping: it sends the values and answers the query they open. */
  let lims: string;

  before(async () => {
    await addStaff(app.db.knex, 'blinded@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'] }, 'Bea Blinded');
    await addStaff(app.db.knex, 'unblinded@sdx.test', { study: world.code, role: 'manager', unblinded: true }, 'Uma Unblinded');
    lims = (await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Ward <LIMS>' })).key;
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: lims, body: { site: '01', sex: 'female', birth_year: 1961, enrolled_on: '2026-03-01' } });
    subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2026-02-10');
    const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: lims,
      body: {
        records: [
          { subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-02-14', sbp: '232', dbp: '95', hr: '71' }, not_done: { rr: 'ND' } },
          { subject, visit: 'screening', form: 'dm', values: { sex: '1', height: '165.5', weight: '70.2' } },
          { subject, visit: 'screening', form: 'mh', tables: { conditions: [{ term: 'Essential hypertension', onset: '2015-05-01', ongoing: 'yes' }] } },
          { subject, visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-0042', arm: 'B' } },
        ],
      },
    });
    expect(sent.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['warn', 'ok', 'ok', 'ok']);
    staff = new PortalClient(app.baseUrl);
    expect((await staff.signIn('blinded@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  it('shows the patient, the values of each visit\'s forms, with units, choice labels, not-done marks and table rows', async () => {
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    expect(card.status).to.equal(200);
    const facts = present(/<dl class="facts">([\s\S]*?)<\/dl>/.exec(card.html)?.[1], 'the facts').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
    expect(facts).to.equal('Site 01 City Hospital Sex female Year of birth 1961 Enrolled on 2026-03-01 Status enrolled Consent given on 2026-02-10');
    const forms = section(card, 'forms');
    expect(forms).to.include('Vital signs vs — complete');
    expect(forms).to.include('Systolic blood pressure sbp 232 mmHg').and.include('Respiratory rate rr not done');
    expect(forms).to.include('Sex sex 1 — Female').and.include('Height height 165.5 cm');
    expect(forms).to.include('Condition Code (SNOMED CT or ICD-10) Onset date Ongoing Essential hypertension 2015-05-01 yes');
    expect(forms).to.include('Haematology lab_hem — not entered');
    // Units show as people write them; the UCUM code the design keeps is the unit's title.
    expect(card.html).to.include('<span class="unit" title="UCUM: mm[Hg]">mmHg</span>');
  });

  it('lists the open queries and the patient\'s audit trail, escaped', async () => {
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    const queries = section(card, 'queries');
    expect(queries).to.match(/^Open queries Visit \/ form Field Status Message Opened by Opened screening \/ vs sbp open .*232.* Ward &lt;LIMS&gt; \(API\) \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    const audit = section(card, 'audit');
    expect(audit).to.include('Ward &lt;LIMS&gt; (API)').and.include('Value entered').and.include('screening / vs sbp 232 mmHg').and.include('Consent given');
    expect(card.html).not.to.include('Ward <LIMS>');
  });

  it('shows a query\'s thread of answers under it: who wrote each answer, when, and what, escaped (issue 22.2)', async () => {
    const read = await app.call<AnswerOf<'listQueries', 200>>('GET', `/api/v1/studies/${world.code}/queries?subject=${subject}`, { key: lims });
    const query = present(read.body.queries.find((q) => q.field === 'sbp'), 'the sbp query');
    const answered = await app.call('POST', `/api/v1/studies/${world.code}/queries/${query.id}/answers`, { key: lims, body: { text: 'Re-measured: <b>232</b> confirmed.' } });
    expect(answered.status, JSON.stringify(answered.body)).to.equal(201);
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    const thread = new RegExp(`<tr class="query-thread" data-query="${query.id}">([\\s\\S]*?)</tr>`).exec(card.html);
    expect(present(present(thread, 'the thread row')[1], 'the thread row\'s cells').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim())
      .to.match(/^Ward &lt;LIMS&gt; \(API\) , \d{4}-\d\d-\d\d \d\d:\d\d UTC: Re-measured: &lt;b&gt;232&lt;\/b&gt; confirmed\.$/);
    expect(section(card, 'queries')).to.include('screening / vs sbp answered');
    expect(card.html).to.include('<tr data-action="query.answered">');
  });

  it('shows the audit trail in words: actions, choices with their labels, marks, statuses and table rows, not codes and JSON', async () => {
    const update = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'screening', form: 'dm', update: true, values: { sex: '2' } }] },
    });
    expect(at(update.body.results, 0).status).to.equal('ok');
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    const rows = [...card.html.matchAll(/<tr data-action="([^"]+)">([\s\S]*?)<\/tr>/g)]
      .map(([, action = '', row = '']): [string, string] => [action, row.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()]);
    const row = (action: string, text: string) => rows.find(([a, r]) => a === action && r.includes(text))?.[1];
    expect(row('record.value_changed', 'sex'), 'a changed choice').to.contain('Value changed screening / dm sex 1 — Female 2 — Male');
    expect(row('record.value_set', ' rr '), 'a not-done mark').to.contain('screening / vs rr not done');
    expect(row('record.value_set', 'conditions'), 'a table row by row').to.contain('conditions Condition: Essential hypertension; Onset date: 2015-05-01; Ongoing: yes');
    expect(row('consent.given', ''), 'consent').to.contain('Consent given');
    expect(row('patient.enrolled', ''), 'enrolment').to.contain('Patient enrolled');
    expect(card.html).to.not.match(/<td[^>]*>\s*\[?\{?&quot;/);

    const ru = await staff.get(`/p/${world.code}/s/${subject}?lang=ru`);
    expect(ru.html).to.include('Значение изменено').and.include('Согласие получено').and.include('не выполнялось');
    await staff.get('/portal?lang=en');
  });

  it('leaves the forms of the unblinded team, and their audit entries, off the card of a blinded person', async () => {
    const blinded = await staff.get(`/p/${world.code}/s/${subject}`);
    expect(blinded.html).not.to.include('Treatment allocation').and.not.include('K-0042').and.not.include('ip_alloc');
    const unblinded = new PortalClient(app.baseUrl);
    await unblinded.signIn('unblinded@sdx.test', STAFF_PASSWORD);
    const card = await unblinded.get(`/p/${world.code}/s/${subject}`);
    expect(section(card, 'forms')).to.include('Treatment allocation ip_alloc — complete').and.include('Kit number kit K-0042');
    expect(section(card, 'audit')).to.include('baseline / ip_alloc kit K-0042');
  });

  it('tells a not-done mark from a text written like one in the audit trail', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: lims, body: { site: '01', sex: 'male', birth_year: 1970, enrolled_on: '2026-03-01' } });
    const patient = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, patient, '2026-02-10');
    const kit = async (entry: { values: Record<string, string> } | { not_done: { kit: 'ND' } }, update: boolean) => {
      const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject: patient, visit: 'baseline', form: 'ip_alloc', update, ...entry }] },
      });
      expect(at(sent.body.results, 0).status, JSON.stringify(sent.body)).to.equal('ok');
    };
    await kit({ values: { kit: 'K-0007', arm: 'A' } }, false);
    await kit({ values: { kit: '[ND]' } }, true);
    await kit({ not_done: { kit: 'ND' } }, true);
    const unblinded = new PortalClient(app.baseUrl);
    await unblinded.signIn('unblinded@sdx.test', STAFF_PASSWORD);
    const card = await unblinded.get(`/p/${world.code}/s/${patient}`);
    const changes = [...card.html.matchAll(/<tr data-action="record.value_changed">([\s\S]*?)<\/tr>/g)]
      .map(([, row = '']) => row.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
    // Newest first: the mark over the text, then the text over the first kit number.
    expect(changes.map((row) => /ip_alloc kit (.*?) Data sent/.exec(row)?.[1])).to.deep.equal(['[ND] not done', 'K-0007 [ND]']);
    // The audit read says the same to a sponsor, in each row's details.
    const trail = await app.call<AnswerOf<'listAuditTrail', 200>>('GET', `/api/v1/studies/${world.code}/audit?subject=${patient}`, { key: world.key });
    expect(trail.body.audit.filter((row) => row.field === 'kit').map((row) => [row.old_value, row.new_value, row.details])).to.deep.equal([
      [null, 'K-0007', {}],
      ['K-0007', '[ND]', { new_value_kind: 'value' }],
      ['[ND]', '[ND]', { old_value_kind: 'value', new_value_kind: 'not_done' }],
    ]);
  });

  it('lists the patient\'s FHIR imports with a link to each review page', async () => {
    const empty = await staff.get(`/p/${world.code}/s/${subject}`);
    expect(section(empty, 'fhir-imports')).to.equal('FHIR imports No FHIR record has been sent for this patient.');
    const bundle = {
      resourceType: 'Bundle', type: 'collection', entry: [
        { resource: { resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1961-04-02' } },
        {
          resource: {
            resourceType: 'Observation', id: 'hr1', status: 'final', subject: { reference: 'Patient/p1' }, effectiveDateTime: '2026-03-01T09:00:00Z',
            code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] }, valueQuantity: { value: 64, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
          },
        },
      ],
    };
    const res = await app.call('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}`, { key: world.key, raw: JSON.stringify(bundle), contentType: 'application/fhir+json' });
    expect(res.status).to.equal(201);
    const card = await staff.get(`/p/${world.code}/s/${subject}`);
    expect(section(card, 'fhir-imports')).to.match(/No\. 1 \d{4}-\d\d-\d\d \d\d:\d\d UTC Test system review waiting for review 2 values, 0 conflicts, 0 same, 0 skipped/);
    expect(card.html).to.include(`href="/p/${world.code}/s/${subject}/fhir/1"`);
    const list = await staff.get(`/p/${world.code}`);
    expect(list.html).to.match(new RegExp(`${subject}</a></td>[\\s\\S]*?<td class="num">1</td>\\s*<td class="num attention">1</td>`));
  });

  it('speaks Russian', async () => {
    const card = await staff.get(`/p/${world.code}/s/${subject}?lang=ru`);
    expect(card.html).to.include('Журнал аудита').and.include('Открытые запросы').and.include('дано 2026-02-10');
    await staff.get('/portal?lang=en');
  });
});
