import { expect } from 'chai';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';
import { createStudyWorld, demoDesign, giveConsent, type StudyWorld } from '../helpers/factories.js';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { at } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

type Row = Record<string, unknown>;

/**
 * Visit windows checked in the one write path (issue 19, point 7): in every study unless its design
 * sets `visit_window_queries: false` (the demo study has it on), a visit date outside its window,
 * counted from the enrolment date, opens an automatic query and gives `warn`; correcting the date closes it.
 */
describe('visit windows (submitFormRecords)', () => {
  const { app, world } = useStudyWorld({ design: demoDesign('WIN') });
  let plain: StudyWorld;
  let stored: StudyWorld;
  const ENROLLED_ON = '2026-03-02';
  // Baseline: planned day 0, window 0 before and 3 after: 2026-03-02 to 2026-03-05.
  const vitals = (vsdate: string) => ({ vsdate, sbp: '120', dbp: '80', hr: '70' });

  async function patient(w: StudyWorld): Promise<string> {
    const res = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${w.code}/patients`, { key: w.key, body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: ENROLLED_ON } });
    expect(res.status).to.equal(201);
    await giveConsent(app.db.knex, w.code, res.body.subject, ENROLLED_ON);
    return res.body.subject;
  }
  const submit = (w: StudyWorld, records: Row[], query = '') => app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${w.code}/records${query}`, { key: w.key, body: { records } });
  const queriesOf = async (subject: string, status: string) =>
    (await app.call<AnswerOf<'listQueries', 200>>('GET', `/api/v1/studies/${world.code}/queries?subject=${subject}&status=${status}`, { key: world.key })).body.queries;

  before(async () => {
    plain = await createStudyWorld(app.db.knex, demoDesign('NOWIN', (d) => { d.visit_window_queries = false; }));
    // A design stored before the member existed: the check applies, as the schema's default does.
    stored = await createStudyWorld(app.db.knex, demoDesign('OLDWIN', (d) => { delete (d as Partial<StudyDesign>).visit_window_queries; }));
  });

  it('opens an "outside the visit window" query for a baseline date months away, and answers warn', async () => {
    const subject = await patient(world);
    const res = await submit(world, [{ subject, visit: 'baseline', form: 'vs', values: vitals('2026-07-15') }]);
    expect(res.status).to.equal(200);
    const message = 'Date 2026-07-15 is outside the window of visit baseline: 2026-03-02 to 2026-03-05, counted from the enrolment date.';
    expect(at(res.body.results, 0)).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1 });
    expect(at(res.body.results, 0).errors).to.deep.equal([{ field: 'vsdate', code: 'outside_visit_window', message }]);
    const open = await queriesOf(subject, 'open');
    expect(open.map((q) => [q.visit, q.form, q.field, q.origin, q.message])).to.deep.equal([
      ['baseline', 'vs', 'vsdate', 'range', 'Date 2026-07-15 is outside the window of visit baseline (2026-03-02 to 2026-03-05)'],
    ]);
    const ru = await submit(world, [{ subject: await patient(world), visit: 'baseline', form: 'vs', values: vitals('2026-03-06') }], '?lang=ru');
    expect(at(at(ru.body.results, 0).errors, 0).message).to.equal('Дата 2026-03-06 вне окна визита baseline: с 2026-03-02 по 2026-03-05, считая от даты включения.');
  });

  it('closes the query by itself when the date is corrected, and keeps ok for dates inside the window', async () => {
    const subject = await patient(world);
    await submit(world, [{ subject, visit: 'baseline', form: 'vs', values: vitals('2026-03-01') }]);
    expect(await queriesOf(subject, 'open')).to.have.length(1);
    const corrected = await submit(world, [{ subject, visit: 'baseline', form: 'vs', update: true, values: { vsdate: '2026-03-05' } }]);
    expect(at(corrected.body.results, 0)).to.deep.include({ status: 'ok', code: 'saved' });
    expect(await queriesOf(subject, 'open')).to.deep.equal([]);
    expect((await queriesOf(subject, 'closed')).map((q) => q.field)).to.deep.equal(['vsdate']);
    // Screening: planned day −14, 14 days before: 2026-02-02 to 2026-02-16. Unscheduled visits have no window.
    const inside = await submit(world, [
      { subject, visit: 'screening', form: 'vs', values: vitals('2026-02-02') },
      { subject, visit: 'unscheduled', form: 'vs', values: vitals('2027-01-01') },
    ]);
    expect(inside.body.results.map((r) => r.status)).to.deep.equal(['ok', 'ok']);
  });

  it('is on for the demo study as written, and for a stored design that lacks the member', async () => {
    expect(demoDesign().visit_window_queries).to.equal(true);
    const subject = await patient(stored);
    const res = await submit(stored, [{ subject, visit: 'baseline', form: 'vs', values: vitals('2026-07-15') }]);
    expect(at(res.body.results, 0)).to.deep.include({ status: 'warn', code: 'saved_with_queries', queries_opened: 1 });
  });

  it('checks nothing in a study that switches it off', async () => {
    const subject = await patient(plain);
    const res = await submit(plain, [{ subject, visit: 'baseline', form: 'vs', values: vitals('2026-07-15') }]);
    expect(at(res.body.results, 0)).to.deep.include({ status: 'ok', code: 'saved' });
  });
});
