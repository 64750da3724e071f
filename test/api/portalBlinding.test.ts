import { expect } from 'chai';
import { demoDesign, giveConsent } from '../helpers/factories.js';
import { PortalClient, type PortalReply } from '../helpers/portalClient.js';
import { addRole, addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

type FhirImport = AnswerOf<'importFhirRecord', 201>;

/** A section of the patient card (by its id) as text without tags. */
function section(page: PortalReply, id: string): string {
  const found = new RegExp(`<section id="${id}">([\\s\\S]*?)</section>`).exec(page.html);
  return present(found?.[1], `section ${id}`).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

/** The open-query count the patient list shows for a subject. */
function openQueriesOn(page: PortalReply, subject: string): number {
  const row = new RegExp(`>${subject}</a></td>[\\s\\S]*?<td class="num">(\\d+)</td>`).exec(page.html);
  return Number(present(row?.[1], `the list row of ${subject}`));
}

/** A file with a haemoglobin (lab_hem: the unblinded team's form in this study) and an ALT (lab_chem: everyone's). */
const LABS = JSON.stringify({
  resourceType: 'Bundle', type: 'collection', entry: [
    { fullUrl: 'urn:uuid:p1', resource: { resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1960-05-05' } },
    ...([['o1', '718-7', 13.5, 'g/dL'], ['o2', '1742-6', 30, 'U/L']] as const).map(([id, loinc, value, unit]) => ({
      fullUrl: `urn:uuid:${id}`,
      resource: {
        resourceType: 'Observation', id, status: 'final', subject: { reference: 'urn:uuid:p1' }, effectiveDateTime: '2026-01-10T09:00:00Z',
        code: { coding: [{ system: 'http://loinc.org', code: loinc }] }, valueQuantity: { value, unit, system: 'http://unitsofmeasure.org', code: unit },
      },
    })),
  ],
});

/**
 * A person may hold several roles in a study, unblinded in one and blinded in another. For a patient,
 * the person sees the unblinded team's forms only if a role of theirs covering the patient's site is
 * unblinded: Mia manages site 02 unblinded and is blinded site staff of site 01.
 */
describe('staff portal: blinding decided by the role that covers the patient\'s site', () => {
  // The demo study is blinded and its treatment allocation (ip_alloc) is the unblinded team's; here the
  // haematology lab is too, so a FHIR file brings an item of that team.
  const { app, world } = useStudyWorld({ design: demoDesign('DEMO', (d) => { d.forms.find((f) => f.code === 'lab_hem')!.team = 'unblinded'; }) });
  const patients = { site01: '', site02: '' };
  const reviews = { site01: '', site02: '' };
  let mixed: PortalClient;
  let unblinded01: PortalClient;

  async function enrolWithAllocation(site: string, kit: string): Promise<string> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-24' },
    });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2026-01-01');
    const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'baseline', form: 'ip_alloc', values: { kit, arm: 'B' } }] },
    });
    expect(sent.body.counts.ok).to.equal(1);
    const raised = await app.call('POST', `/api/v1/studies/${world.code}/queries`, {
      key: world.key, body: { subject, visit: 'baseline', form: 'ip_alloc', field: 'kit', message: `Kit ${kit} unreadable?` },
    });
    expect(raised.status).to.equal(201);
    return subject;
  }

  async function proposeLabs(subject: string): Promise<string> {
    const res = await app.call<FhirImport>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}&mode=review`, { key: world.key, raw: LABS, contentType: 'application/fhir+json' });
    expect(res.status).to.equal(201);
    expect(res.body.items.filter((i) => i.state === 'new').map((i) => i.form).sort()).to.deep.equal(['lab_chem', 'lab_hem']);
    return new URL(res.body.review_url).pathname;
  }

  const importStatus = async (subject: string) =>
    present(await app.db.knex('fhir_imports as i').join('patients as p', 'p.id', 'i.patient_id').where({ 'p.subject': subject }).first<{ status: string } | undefined>('i.status'), subject).status;

  before(async () => {
    await addStaff(app.db.knex, 'mia@sdx.test', { study: world.code, role: 'manager', sites: ['02'], unblinded: true }, 'Mia Mixed');
    await addRole(app.db.knex, 'mia@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'], unblinded: false });
    await addStaff(app.db.knex, 'ulf@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'], unblinded: true }, 'Ulf Unblinded');
    patients.site01 = await enrolWithAllocation('01', 'K-0101');
    patients.site02 = await enrolWithAllocation('02', 'K-0202');
    reviews.site01 = await proposeLabs(patients.site01);
    reviews.site02 = await proposeLabs(patients.site02);
    mixed = new PortalClient(app.baseUrl);
    expect((await mixed.signIn('mia@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
    unblinded01 = new PortalClient(app.baseUrl);
    expect((await unblinded01.signIn('ulf@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  it('leaves the treatment allocation, its query and its audit rows off the card of a patient of the site where the person is blinded', async () => {
    const blindedCard = await mixed.get(`/p/${world.code}/s/${patients.site01}`);
    expect(blindedCard.status).to.equal(200);
    expect(blindedCard.html).not.to.include('Treatment allocation').and.not.include('K-0101').and.not.include('ip_alloc');
    // The import's counts leave the haemoglobin out: a count would tell of a hidden value.
    expect(section(blindedCard, 'fhir-imports')).to.include('1 values, 0 conflicts, 0 same, 0 skipped');

    const card = await mixed.get(`/p/${world.code}/s/${patients.site02}`);
    expect(section(card, 'forms')).to.include('Treatment allocation ip_alloc — complete').and.include('Kit number kit K-0202');
    expect(section(card, 'queries')).to.include('Kit K-0202 unreadable?');
    expect(section(card, 'audit')).to.include('baseline / ip_alloc kit K-0202');
    expect(section(card, 'fhir-imports')).to.include('2 values, 0 conflicts, 0 same, 0 skipped');
  });

  it('leaves the unblinded team\'s FHIR items off the review page of a patient of the site where the person is blinded', async () => {
    const blindedPage = await mixed.get(reviews.site01);
    expect(blindedPage.status).to.equal(200);
    expect(blindedPage.html).to.include('data-form="lab_chem"').and.not.include('data-form="lab_hem"').and.not.include('13.5');
    expect(blindedPage.html).to.include('1 values belong to forms of the unblinded team and are not shown to you');
    expect(blindedPage.html).to.match(/<dd>1 values, 0 conflicts, 0 same, 0 skipped<\/dd>/);

    const page = await mixed.get(reviews.site02);
    expect(page.html).to.include('data-form="lab_chem"').and.include('data-form="lab_hem"').and.include('13.5');
    expect(page.html).not.to.include('not shown to you');
    expect(page.html).to.match(/<dd>2 values, 0 conflicts, 0 same, 0 skipped<\/dd>/);
  });

  it('counts queries on the unblinded team\'s forms in the patient list only where the person is unblinded', async () => {
    const list = await mixed.get(`/p/${world.code}`);
    expect(list.status).to.equal(200);
    expect([openQueriesOn(list, patients.site01), openQueriesOn(list, patients.site02)]).to.deep.equal([0, 1]);
    expect(openQueriesOn(await unblinded01.get(`/p/${world.code}`), patients.site01), 'an unblinded person of site 01').to.equal(1);
  });

  it('lets the person decide an import waiting on the unblinded team only where they are unblinded', async () => {
    await mixed.get(reviews.site01);
    for (const decision of ['confirm_all', 'reject']) {
      const refused = await mixed.post(reviews.site01, { decision });
      expect(refused.status, decision).to.equal(403);
      expect(refused.html, decision).to.include('a member of the unblinded team');
    }
    expect(await importStatus(patients.site01)).to.equal('proposed');

    await unblinded01.get(reviews.site01);
    expect((await unblinded01.post(reviews.site01, { decision: 'confirm_all' })).status).to.equal(303);
    expect(await importStatus(patients.site01)).to.equal('confirmed');

    await mixed.get(reviews.site02);
    expect((await mixed.post(reviews.site02, { decision: 'confirm_all' })).status).to.equal(303);
    expect(await importStatus(patients.site02)).to.equal('confirmed');
    const saved = await app.db.knex('records as r').join('forms as f', 'f.id', 'r.form_id').join('patients as p', 'p.id', 'r.patient_id')
      .where({ 'f.code': 'lab_hem', 'p.subject': patients.site02 }).first<{ values: Record<string, string> } | undefined>('r.values');
    expect(saved?.values.hgb).to.equal('13.5');
  });
});
