import { expect } from 'chai';
import { latestToday } from '../../src/domain/patients/enrolPatient.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import { createStudyWorld, demoDesign, makeKey, operator } from '../helpers/factories.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { at, only, present } from '../helpers/only.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { startServiceProcess } from '../helpers/serviceProcess.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

const enrolment = (over: Record<string, unknown> = {}) => ({ site: '01', sex: 'female', birth_year: 1961, enrolled_on: '2026-01-15', ...over });

describe('createPatient', () => {
  const { app, world } = useStudyWorld();
  let noEnrolKey: string;
  let site01Key: string;
  const path = (code = world.code) => `/api/v1/studies/${code}/patients`;
  type Enrolled = AnswerOf<'createPatient', 201>;
  /** Enrols; the answer's body is the new patient unless the test names a refusal's type (`enrol<Problem>`). */
  const enrol = <Body = Enrolled>(body: unknown, key = world.key, query = '') => app.call<Body>('POST', `${path()}${query}`, { key, body });
  const patientCount = async () => Number(only(await app.db.knex('patients').count({ n: '*' })).n);

  before(async () => {
    noEnrolKey = (await makeKey(app.db.knex, { study: world.code, by: world.manager, canEnrol: false })).key;
    site01Key = (await makeKey(app.db.knex, { study: world.code, by: world.manager, sites: ['01'] })).key;
  });

  it('assigns the site\'s next number in subject_format (01-001, 01-002, 02-001) and keeps the enrolment data', async () => {
    const first = await enrol(enrolment());
    expect(first.status).to.equal(201);
    expect(first.body).to.deep.equal({ subject: '01-001', site: '01' });
    expect((await enrol(enrolment({ sex: 'male', birth_year: 1970 }))).body).to.deep.equal({ subject: '01-002', site: '01' });
    expect((await enrol(enrolment({ site: '02' }))).body).to.deep.equal({ subject: '02-001', site: '02' });
    const rows = await app.db.knex('patients as p').join('sites as s', 's.id', 'p.site_id').orderBy('p.id')
      .select('p.subject', 's.number as site', 'p.sex', 'p.birth_year', 'p.enrolled_on', 'p.status');
    expect(rows).to.deep.equal([
      { subject: '01-001', site: '01', sex: 'female', birth_year: 1961, enrolled_on: '2026-01-15', status: 'enrolled' },
      { subject: '01-002', site: '01', sex: 'male', birth_year: 1970, enrolled_on: '2026-01-15', status: 'enrolled' },
      { subject: '02-001', site: '02', sex: 'female', birth_year: 1961, enrolled_on: '2026-01-15', status: 'enrolled' },
    ]);
  });

  it('uses a free requested subject that carries its site\'s prefix, and numbering then skips it', async () => {
    const own = await enrol(enrolment({ subject: '01-HIS4711' }));
    expect(own.status).to.equal(201);
    expect(own.body).to.deep.equal({ subject: '01-HIS4711', site: '01' });
    expect((await enrol(enrolment({ subject: '01-003' }))).body).to.deep.equal({ subject: '01-003', site: '01' });
    expect((await enrol(enrolment())).body).to.deep.equal({ subject: '01-004', site: '01' });
  });

  it('refuses a subject without its site\'s mark with 422 subject_other_site, in English and Russian, and keeps nothing (issue 19.8)', async () => {
    const before = await patientCount();
    const res = await enrol<Problem>(enrolment({ subject: '02-009' }));
    expect(res.status).to.equal(422);
    const detail = 'The patient ID "02-009" does not carry the mark of site 01 that the study\'s format {site}-{seq:3} gives it.';
    expect(res.body).to.deep.include({ status: 422, code: 'subject_other_site', title: 'Patient ID of another site', detail });
    expect(res.body.errors).to.deep.equal([{ pointer: '/subject', code: 'subject_other_site', message: detail }]);
    for (const subject of ['HIS-4711', '01-', '001-1', '101-1']) expect((await enrol<Problem>(enrolment({ subject }))).body.code, subject).to.equal('subject_other_site');
    const ru = await enrol<Problem>(enrolment({ site: '02', subject: '01-777' }), world.key, '?lang=ru');
    expect(ru.status).to.equal(422);
    expect(ru.body.title).to.equal('Номер пациента другого центра');
    expect(at(ru.body.errors ?? [], 0).message).to.equal('Номер пациента "01-777" не содержит обозначения центра 02, которое задаёт формат исследования {site}-{seq:3}.');
    expect(await patientCount()).to.equal(before);
  });

  it('finds the site\'s mark at the end when the study\'s format puts the site last', async () => {
    const fmt = await createStudyWorld(app.db.knex, demoDesign('SUFFIX', (d) => { d.subject_format = 'P{seq:4}-{site}'; }));
    const send = <Body = Enrolled>(body: Record<string, unknown>) => app.call<Body>('POST', path(fmt.code), { key: fmt.key, body });
    expect((await send(enrolment({ site: '02', subject: 'H4711-02' }))).body).to.deep.equal({ subject: 'H4711-02', site: '02' });
    expect((await send<Problem>(enrolment({ site: '02', subject: 'P0009-01' }))).body.code).to.equal('subject_other_site');
  });

  it('refuses a taken subject with 409 subject_taken, pointing at /subject, and keeps nothing', async () => {
    const before = await patientCount();
    const res = await enrol<Problem>(enrolment({ subject: '01-001' }));
    expect(res.status).to.equal(409);
    expect(res.body).to.deep.include({ status: 409, code: 'subject_taken', title: 'Patient ID taken', detail: 'The patient ID "01-001" is already used in this study.' });
    expect(res.body.errors).to.deep.equal([{ pointer: '/subject', code: 'subject_taken', message: 'The patient ID "01-001" is already used in this study.' }]);
    expect(await patientCount()).to.equal(before);
    const ru = await enrol<Problem>(enrolment({ subject: '01-001' }), world.key, '?lang=ru');
    expect(ru.status).to.equal(409);
    expect(ru.body.title).to.equal('Номер пациента занят');
    expect(at(ru.body.errors ?? [], 0).message).to.equal('Номер пациента "01-001" уже используется в этом исследовании.');
  });

  it('records the enrolment in the audit trail with the key\'s name plus " (API)" as author', async () => {
    const res = await enrol(enrolment({ site: '02', sex: 'other', subject: '02-AUDIT1' }));
    expect(res.status).to.equal(201);
    const patient = await app.db.knex('patients').where({ subject: '02-AUDIT1' }).first<{ id: number } | undefined>();
    const rows = await app.db.knex('audit_events').where({ patient_id: patient?.id })
      .select<{ action: string; author: string; reason: string; actor_type: string; details: Record<string, unknown> }[]>('action', 'author', 'reason', 'actor_type', 'details');
    expect(rows).to.have.length(1);
    expect(rows[0]).to.deep.include({ action: 'patient.enrolled', author: 'Test system (API)', actor_type: 'api_key', reason: 'Data sent through the API key "Test system"' });
    expect(only(rows).details).to.deep.include({ subject: '02-AUDIT1', site: '02', sex: 'other', assigned: false });
  });

  it('refuses a key without the enrol right (403 right_missing)', async () => {
    const res = await enrol<Problem>(enrolment(), noEnrolKey);
    expect(res.status).to.equal(403);
    expect(res.body).to.deep.include({ code: 'right_missing', detail: 'This API key does not have the right to enrol patients.' });
  });

  it('refuses a site that is not one of the key\'s sites, or does not exist, with 422 unknown_site', async () => {
    const before = await patientCount();
    for (const site of ['02', '99']) {
      const res = await enrol<Problem>(enrolment({ site }), site01Key);
      expect(res.status, site).to.equal(422);
      expect(res.body.code).to.equal('unknown_site');
      expect(res.body.errors).to.deep.equal([{ pointer: '/site', code: 'unknown_site', message: `Site "${site}" is not one of the sites of this API key.` }]);
    }
    expect(await patientCount()).to.equal(before);
  });

  describe('validates sex, birth year and enrolment date, with one error per field (422 invalid_body)', () => {
    // Two days on, so the date is in the future everywhere even if the suite runs across midnight.
    const future = new Date(Date.parse(`${latestToday()}T00:00:00Z`) + 2 * 86_400_000).toISOString().slice(0, 10);
    const cases: { name: string; body: Record<string, unknown>; pointers: [string, string][] }[] = [
      { name: 'an unknown sex code', body: enrolment({ sex: 'F' }), pointers: [['/sex', 'enum']] },
      { name: 'a birth year after the enrolment year', body: enrolment({ birth_year: 2027 }), pointers: [['/birth_year', 'birth_year_implausible']] },
      { name: 'a birth year more than 120 years before enrolment', body: enrolment({ birth_year: 1905 }), pointers: [['/birth_year', 'birth_year_implausible']] },
      { name: 'a birth year below the schema minimum', body: enrolment({ birth_year: 1800 }), pointers: [['/birth_year', 'minimum']] },
      { name: 'a birth year sent as text', body: enrolment({ birth_year: 'nineteen' }), pointers: [['/birth_year', 'type']] },
      { name: 'a day that does not exist', body: enrolment({ enrolled_on: '2026-02-30' }), pointers: [['/enrolled_on', 'format']] },
      { name: 'an enrolment date in the future everywhere on earth', body: enrolment({ enrolled_on: future }), pointers: [['/enrolled_on', 'date_in_future']] },
      { name: 'missing members', body: { site: '01' }, pointers: [['/sex', 'required'], ['/birth_year', 'required'], ['/enrolled_on', 'required']] },
      { name: 'an unknown member', body: enrolment({ initials: 'AB' }), pointers: [['/initials', 'additionalProperties']] },
      { name: 'a subject with a blank', body: enrolment({ subject: '01 001' }), pointers: [['/subject', 'pattern']] },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const before = await patientCount();
        const res = await enrol<Problem>(c.body);
        expect(res.status).to.equal(422);
        expect(res.body.code).to.equal('invalid_body');
        expect(res.body.errors?.map((e) => [e.pointer, e.code])).to.have.deep.members(c.pointers);
        for (const e of res.body.errors ?? []) expect(e.message).to.be.a('string').and.not.equal('');
        expect(await patientCount()).to.equal(before);
      });
    }
  });

  it('accepts the enrolment date that is today somewhere on earth (a site east of UTC enrols on its own date)', async () => {
    const res = await enrol(enrolment({ enrolled_on: latestToday(), subject: '01-TODAY1' }));
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.equal({ subject: '01-TODAY1', site: '01' });
  });

  it('words the field errors in Russian for lang=ru', async () => {
    const res = await enrol<Problem>(enrolment({ birth_year: 2027 }), world.key, '?lang=ru');
    expect(res.status).to.equal(422);
    expect(res.body.title).to.equal('Неверное тело запроса');
    expect(res.body.errors).to.deep.equal([{ pointer: '/birth_year', code: 'birth_year_implausible', message: 'Год рождения должен быть не позже года включения и не более чем на 120 лет раньше.' }]);
  });

  it('refuses with 423 while enrolment is closed or the study is locked, and keeps nothing', async () => {
    const before = await patientCount();
    const cases = [
      { settings: { enrolmentOpen: false }, code: 'enrolment_closed', detail: 'Enrolment is closed for this study.' },
      { settings: { locked: true }, code: 'study_locked', detail: 'The study database is locked; no data can be changed.' },
    ];
    for (const c of cases) {
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, c.settings));
      try {
        const res = await enrol<Problem>(enrolment());
        expect(res.status, c.code).to.equal(423);
        expect(res.body).to.deep.include({ code: c.code, detail: c.detail });
      } finally {
        await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { enrolmentOpen: true, locked: false }));
      }
    }
    expect(await patientCount()).to.equal(before);
    expect((await enrol(enrolment())).status).to.equal(201);
  });

  it('numbers in the study\'s own subject_format', async () => {
    const fmt = await createStudyWorld(app.db.knex, demoDesign('FMT', (d) => { d.subject_format = 'P{seq:4}-{site}'; }));
    const res = await app.call<Enrolled>('POST', path(fmt.code), { key: fmt.key, body: enrolment({ site: '02' }) });
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.equal({ subject: 'P0001-02', site: '02' });
    const design = await app.call<AnswerOf<'getStudyDesign', 200>>('GET', `/api/v1/studies/${fmt.code}`, { key: fmt.key });
    expect(design.body.study.subject_format).to.equal('P{seq:4}-{site}');
  });

  it('gives a subject requested by two enrolments at once to one of them; the other gets 409', async () => {
    const results = await Promise.all([1, 2].map(() => enrol(enrolment({ subject: '01-TWICE1' }))));
    expect(results.map((r) => r.status).sort()).to.deep.equal([201, 409]);
    expect(await app.db.knex('patients').where({ subject: '01-TWICE1' }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
  });

  it('moves on to the following number when a requested subject takes the next number while the enrolment is under way', async () => {
    const held = await createStudyWorld(app.db.knex, demoDesign('HELD'));
    const study = present(await app.db.knex('studies').where({ code: held.code }).first<{ id: number } | undefined>(), 'the study');
    const site = present(await app.db.knex('sites').where({ study_id: study.id, number: '01' }).first<{ id: number } | undefined>(), 'site 01');
    // A concurrent enrolment with subject 01-001, inserted but not yet committed: invisible to the check before the insert.
    const trx = await app.db.knex.transaction();
    try {
      await trx('patients').insert({ study_id: study.id, site_id: site.id, subject: '01-001', sex: 'male', birth_year: 1950, enrolled_on: '2026-01-02' });
      const pending = app.call<Enrolled>('POST', path(held.code), { key: held.key, body: enrolment() });
      // Wait until the enrolment's insert blocks on the uncommitted row, then let the other enrolment commit.
      for (;;) {
        const waiting = await app.db.knex.raw<{ rows: { n: number }[] }>("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()");
        if (only(waiting.rows).n > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await trx.commit();
      const res = await pending;
      expect(res.status).to.equal(201);
      expect(res.body).to.deep.equal({ subject: '01-002', site: '01' });
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
    }
  });

  it('numbers 50 simultaneous enrolments sent to two service processes without a duplicate or a gap per site, with one audit row per enrolment', async () => {
    const race = await createStudyWorld(app.db.knex, demoDesign('RACE'));
    const second = await startServiceProcess({});
    try {
      const send = async (baseUrl: string, body: unknown) => {
        const response = await fetch(`${baseUrl}${path(race.code)}`, {
          method: 'POST', headers: { authorization: `Bearer ${race.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
        });
        const parsed = await response.json() as Enrolled | Problem;
        await assertMatchesSpec('createPatient', response.status, response.headers.get('content-type') ?? '', parsed);
        return { status: response.status, body: parsed, requested: (body as { subject?: string }).subject };
      };
      const requests = Array.from({ length: 50 }, (_, i) => send(i % 2 === 0 ? app.baseUrl : second.baseUrl, enrolment({ site: i % 5 < 3 ? '01' : '02' })));
      // Requested subjects that the numbering is about to reach: each lands once, by whichever enrolment gets there first.
      requests.push(send(second.baseUrl, enrolment({ site: '01', subject: '01-010' })), send(app.baseUrl, enrolment({ site: '02', subject: '02-004' })));
      const results = await Promise.all(requests);
      const assigned = results.filter((r) => r.requested === undefined);
      expect(assigned.map((r) => r.status)).to.deep.equal(Array(50).fill(201));
      for (const r of results.filter((x) => x.requested !== undefined)) expect([201, 409]).to.include(r.status);
      const rows = await app.db.knex('patients as p').join('studies as st', 'st.id', 'p.study_id').join('sites as s', 's.id', 'p.site_id')
        .where('st.code', race.code).select<{ subject: string; site: string }[]>('p.subject', 's.number as site');
      expect(new Set(rows.map((r) => r.subject)).size).to.equal(rows.length);
      for (const [site, count] of [['01', 30], ['02', 20]] as const) {
        const numbers = rows.filter((r) => r.site === site).map((r) => Number(at(r.subject.split('-'), 1))).sort((a, b) => a - b);
        const requested = results.filter((r) => r.requested?.startsWith(site) && r.status === 201).length;
        expect(numbers, `site ${site}`).to.deep.equal(Array.from({ length: count + requested }, (_, i) => i + 1));
      }
      const answered = new Set(assigned.map((r) => ('subject' in r.body ? r.body.subject : undefined)));
      expect(answered.size).to.equal(50);
      // One audit row per patient enrolled, and none for a refused enrolment.
      const audited = await app.db.knex('audit_events as a').join('studies as st', 'st.id', 'a.study_id').leftJoin('patients as p', 'p.id', 'a.patient_id')
        .where({ 'st.code': race.code, 'a.action': 'patient.enrolled' }).select<{ subject: string }[]>('p.subject');
      expect(audited.map((a) => a.subject).sort()).to.deep.equal(rows.map((r) => r.subject).sort());
    } finally {
      await second.stop();
    }
  });
});
