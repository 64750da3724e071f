import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { inTransaction } from '../../src/db/stores.js';
import { createStudyWorld, demoDesign, giveConsent, operator, type StudyWorld } from '../helpers/factories.js';
import { receivedBodies, startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase, testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * Read calls never return a patient's e-mail, PIN, date of birth, initials or birth year (spec,
 * "Reading data"). The file is named to run last (mocha runs files in alphabetical order): it scans
 * every response body the whole run received, through `receivedBodies`, for private values.
 *
 * So that the scan means something for the other files too, a root hook (outside any `describe`,
 * so mocha runs it before the first test of the run) installs a trigger that gives every patient
 * inserted from then on distinctive private values; this file's `after` removes it again.
 */

const MARKS = {
  emailDomain: '@private-leak.invalid',
  pinPrefix: 'PIN-LEAK-',
  // Characters outside base64url, so no page token can contain it by chance.
  initials: 'Q~Z~X',
  dateOfBirth: '1904-07-13',
};
const TRIGGER = 'sdx_test_private_marks';

before(async () => {
  // A trigger is a schema change: the owner's to make, never the service's runtime role's.
  const knex = (await testOwnerDatabase()).knex;
  await knex.raw(`create or replace function ${TRIGGER}() returns trigger language plpgsql as $$
    begin
      new.email := coalesce(new.email, 'patient-' || new.id || '${MARKS.emailDomain}');
      new.pin := coalesce(new.pin, '${MARKS.pinPrefix}' || new.id);
      new.initials := coalesce(new.initials, '${MARKS.initials}');
      new.date_of_birth := coalesce(new.date_of_birth, date '${MARKS.dateOfBirth}');
      return new;
    end $$`);
  await knex.raw(`drop trigger if exists ${TRIGGER} on patients`);
  await knex.raw(`create trigger ${TRIGGER} before insert on patients for each row execute function ${TRIGGER}()`);
});

/** Read pages among the bodies: the JSON objects with a watermark and the rows of one read call. */
function readPages(bodies: string[]): { call: string; rows: Record<string, unknown>[]; page: Record<string, unknown> }[] {
  return bodies.flatMap((text) => {
    let page: unknown;
    try {
      page = JSON.parse(text);
    } catch {
      return [];
    }
    if (typeof page !== 'object' || page === null || !('watermark' in page)) return [];
    const call = ['patients', 'records', 'queries', 'audit'].find((c) => Array.isArray((page as Record<string, unknown>)[c]));
    return call ? [{ call, rows: (page as Record<string, Record<string, unknown>[]>)[call], page: page as Record<string, unknown> }] : [];
  });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Every string and number in a JSON value. */
function leaves(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(leaves);
  return [value];
}

describe('privacy of the read calls (scans every response of the run)', () => {
  let app: TestApp;
  let world: StudyWorld;
  /** How many bodies other files had received when this file started. */
  let fromOtherFiles: number;
  /** Patients of this file that the trigger marked on enrolment (proof that it works). */
  let marked: number;
  const own = { email: 'anna.private@hospital.invalid', pin: '7364-PRIV', initials: 'A~P', dateOfBirth: '1907-02-03', birthYear: 1907 };

  before(async () => {
    fromOtherFiles = receivedBodies.length;
    app = await startTestApp();
    await resetDatabase(app.db.knex);
    world = await createStudyWorld(app.db.knex, demoDesign('PRIV'));
    const subjects: string[] = [];
    for (const site of ['01', '01', '02']) {
      const res = await app.call('POST', '/api/v1/studies/PRIV/patients', { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-02' } });
      expect(res.status).to.equal(201);
      subjects.push(res.body.subject);
      await giveConsent(app.db.knex, 'PRIV', res.body.subject);
    }
    const sent = await app.call('POST', '/api/v1/studies/PRIV/records', {
      key: world.key,
      body: { records: subjects.map((subject) => ({ subject, visit: 'screening', form: 'vs', values: { vsdate: '2025-12-15', sbp: '240', dbp: '80', hr: '70' } })) },
    });
    expect(sent.body.counts.warn).to.equal(3);
    marked = (await app.db.knex('patients').where('email', 'like', `%${MARKS.emailDomain}`).where({ initials: MARKS.initials })).length;
    // The private attributes are kept for the site team (they come from the portal, never from the API).
    await app.db.knex('patients').update({ email: own.email, pin: own.pin, initials: own.initials, date_of_birth: own.dateOfBirth, birth_year: own.birthYear });
  });
  after(async () => {
    const owner = (await testOwnerDatabase()).knex;
    await owner.raw(`drop trigger if exists ${TRIGGER} on patients`);
    await owner.raw(`drop function if exists ${TRIGGER}()`);
    await app.close();
  });

  it('returns no private attribute in any read call, filter, page, language or removal', async () => {
    const knex = app.db.knex;
    const base = '/api/v1/studies/PRIV';
    const watermark = (await app.call('GET', `${base}/patients`, { key: world.key })).body.watermark;
    await inTransaction(knex, (s) => recordConsent(s, operator, { study: 'PRIV', subject: '01-002', change: { withdrawn: '2026-02-01', dataUse: true } }));
    const start = receivedBodies.length;
    for (const call of ['patients', 'records', 'queries', 'audit']) {
      for (const query of ['', '?limit=1', '?site=01', '?subject=01-001', `?updated_since=${watermark}`, '?lang=ru', '?status=open', '?site=99', '?email=x']) {
        const res = await app.call('GET', `${base}/${call}${query}`, { key: world.key });
        expect(res.status).to.be.oneOf([200, 400]);
        if (res.body.next) await app.call('GET', `${base}/${call}${query}${query ? '&' : '?'}after=${res.body.next}`, { key: world.key });
      }
    }
    const mine = receivedBodies.slice(start);
    const pages = readPages(mine);
    // The scan looked at pages that carry these patients and their removal, not at empty answers.
    expect(pages.filter((p) => p.call === 'patients').flatMap((p) => p.rows.map((r) => r.subject))).to.include.members(['01-001', '02-001']);
    expect(pages.filter((p) => p.call === 'audit').flatMap((p) => p.rows.map((r) => r.subject))).to.include.members(['01-001', '02-001']);
    expect(pages.flatMap((p) => p.page.removed as { subject: string }[]).map((r) => r.subject)).to.include('01-002');
    for (const text of mine) {
      for (const value of [own.email, own.pin, own.initials, own.dateOfBirth]) expect(text, text).to.not.include(value);
    }
    for (const { page } of pages) {
      expect(leaves(page), 'birth year').to.not.include.oneOf([own.birthYear, String(own.birthYear)]);
    }
  });

  it('finds in no API response of the whole run a private value the trigger gave a patient', async () => {
    expect(marked, 'the trigger marks every patient inserted during the run').to.equal(3);
    expect(receivedBodies.length).to.be.above(fromOtherFiles);
    // JSON bodies: the API's answers. The portal's HTML pages are for the site team, who may see these values.
    const leaks = receivedBodies.filter(isJson).filter((text) =>
      text.includes(MARKS.emailDomain) || text.includes(MARKS.pinPrefix) || text.includes(MARKS.initials) || text.includes(MARKS.dateOfBirth));
    expect(leaks).to.deep.equal([]);
  });

  it('returns read rows with only the members the spec allows, in every read page of the run', async () => {
    const pages = readPages(receivedBodies);
    expect(pages.length).to.be.above(0);
    const allowed: Record<string, string[]> = {
      patients: ['subject', 'site', 'sex', 'enrolled_on', 'status', 'updated_at'],
      records: ['id', 'subject', 'site', 'visit', 'form', 'instance', 'status', 'source', 'updated_at', 'values', 'not_done', 'tables'],
      queries: ['id', 'subject', 'site', 'visit', 'instance', 'form', 'field', 'status', 'origin', 'message', 'opened_at', 'closed_at', 'updated_at'],
      audit: ['id', 'position', 'at', 'author', 'reason', 'action', 'subject', 'site', 'visit', 'form', 'instance', 'field', 'old_value', 'new_value',
        'details', 'actor_type', 'actor_id', 'study_id', 'patient_id', 'record_id', 'previous_hash', 'hash'],
    };
    for (const { call, rows, page } of pages) {
      expect(Object.keys(page)).to.have.members([call, 'next', 'watermark', 'removed']);
      for (const row of rows) expect(allowed[call], call).to.include.members(Object.keys(row));
      for (const removal of page.removed as Record<string, unknown>[]) expect(Object.keys(removal)).to.have.members(['subject', 'site', 'reason', 'removed_at']);
    }
  });
});
