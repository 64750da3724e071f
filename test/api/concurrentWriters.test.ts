import { expect } from 'chai';
import { createStudyWorld, giveConsent, makeKey, type StudyWorld } from '../helpers/factories.js';
import { startTestApp, type Reply, type TestApp } from '../helpers/testApp.js';
import { resetDatabase } from '../helpers/testDatabase.js';

/**
 * Two integrators, each with its own key, write the same form instance at the same moment (issue 10,
 * item 3): no lost update, one insert wins and the other is told the form is filled, and every value
 * change has exactly one audit row whose old value is the value the previous change left.
 */

type Row = Record<string, any>;

const ROUNDS = 12;
const VITALS = { vsdate: '2026-03-02', sbp: '120', dbp: '80', hr: '70' };
/** A vital-signs date inside each visit's window for the patients below, enrolled on 2026-03-01: any other opens a query (issue 19.7). */
const VISIT_DAY: Record<string, string> = { screening: '2026-02-15', baseline: '2026-03-02', week4: '2026-03-29', week12: '2026-05-24', unscheduled: '2026-03-02' };

interface Writer { name: string; key: string; id: number }

/** A fresh form instance each round: the four planned visits, then instances 1, 2, … of the repeating one. */
function placeOf(round: number): { visit: string; instance?: number } {
  const planned = ['screening', 'baseline', 'week4', 'week12'];
  return round < planned.length ? { visit: planned[round] } : { visit: 'unscheduled', instance: round - planned.length + 1 };
}

/** The vital signs of a round, dated inside its visit's window. */
const vitalsOf = (round: number, over: Row): Row => ({ ...VITALS, vsdate: VISIT_DAY[placeOf(round).visit]!, ...over });

describe('two keys writing the same form at the same moment', () => {
  let app: TestApp;
  let world: StudyWorld;
  let writers: [Writer, Writer];

  const submit = (writer: Writer, record: Row): Promise<Reply> =>
    app.call('POST', `/api/v1/studies/${world.code}/records`, { key: writer.key, body: { records: [record] } });

  /** Both writers' vital signs for one place, sent together: each answer is one HTTP 200, whose one result is returned. */
  async function race(place: Row, values: [Row, Row], update: boolean): Promise<Row[]> {
    const replies = await Promise.all(writers.map((w, i) => submit(w, { ...place, form: 'vs', values: values[i], ...(update ? { update: true } : {}) })));
    for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return replies.map((r) => r.body.results[0]);
  }

  const recordAt = (subject: string, visit: string) => app.db.knex('records as r')
    .join('patients as p', 'p.id', 'r.patient_id').join('visits as v', 'v.id', 'r.visit_id')
    .where({ 'p.subject': subject, 'v.code': visit }).first('r.id', 'r.values');
  const auditOf = (recordId: number) => app.db.knex('audit_events').where({ record_id: recordId }).orderBy('id')
    .select('action', 'field_code', 'old_value', 'new_value', 'author', 'actor_id');

  before(async () => {
    app = await startTestApp();
    await resetDatabase(app.db.knex);
    world = await createStudyWorld(app.db.knex);
    const made = await Promise.all(['Hospital EHR', 'Central lab'].map(async (name) => ({ name, ...(await makeKey(app.db.knex, { study: world.code, by: world.manager, name })) })));
    writers = [made[0], made[1]];
  });
  after(() => app.close());

  it('saves a form both keys send first at the same moment once: one insert wins, the other answers skip already_filled', async () => {
    const enrolled = await app.call('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'male', birth_year: 1958, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    for (let round = 0; round < ROUNDS; round++) {
      const values: [Row, Row] = [vitalsOf(round, { sbp: String(130 + round), hr: '61' }), vitalsOf(round, { sbp: String(170 + round), hr: '91' })];
      const outcomes = await race({ subject, ...placeOf(round) }, values, false);
      const winner = outcomes.findIndex((o) => o.status === 'ok');
      expect(outcomes.map((o) => o.code).sort(), `round ${round}`).to.deep.equal(['already_filled', 'saved']);
      const loser = outcomes[1 - winner];
      expect(loser).to.include({ status: 'skip', code: 'already_filled', record_id: outcomes[winner].record_id });

      const saved = await app.db.knex('records').where({ id: outcomes[winner].record_id }).first('values');
      expect(saved.values, `round ${round}: the winner's values, all of them`).to.deep.equal(values[winner]);
      const audit = await auditOf(outcomes[winner].record_id);
      expect(audit.map((a) => [a.action, a.field_code, a.new_value])).to.have.deep.members(Object.entries(values[winner]).map(([field, value]) => ['record.value_set', field, value]));
      expect(audit.every((a) => a.author === `${writers[winner].name} (API)` && a.actor_id === writers[winner].id), 'every row by the winning key').to.equal(true);
    }
    const records = await app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', subject).count({ n: '*' });
    expect(Number(records[0].n)).to.equal(ROUNDS);
  });

  it('applies both keys\' updates sent at the same moment one after the other: nothing lost, one audit row per change, an unbroken old-value chain', async () => {
    const enrolled = await app.call('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '02', sex: 'female', birth_year: 1964, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    const first = await submit(writers[0], { subject, visit: 'screening', form: 'vs', values: { ...VITALS, vsdate: VISIT_DAY.screening! } });
    const id = first.body.results[0].record_id;
    /** The pair of values each writer sent in each round, to tell who made each change. */
    const sent = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      // Both fields change together and never repeat a value: a torn write or a lost change would show.
      const values: [Row, Row] = [{ sbp: String(100 + 2 * round), hr: String(50 + 2 * round) }, { sbp: String(101 + 2 * round), hr: String(51 + 2 * round) }];
      values.forEach((v, i) => sent.set(`${v.sbp}/${v.hr}`, i));
      const outcomes = await race({ subject, visit: 'screening' }, values, true);
      expect(outcomes.map((o) => [o.status, o.code, o.record_id]), `round ${round}`).to.deep.equal([['ok', 'saved', id], ['ok', 'saved', id]]);
      const stored = (await recordAt(subject, 'screening')).values;
      expect([values[0], values[1]].map((v) => `${v.sbp}/${v.hr}`), `round ${round}: the stored pair is one writer's, whole`).to.include(`${stored.sbp}/${stored.hr}`);
    }

    const audit = await auditOf(id);
    const changes = audit.filter((a) => a.action === 'record.value_changed');
    const stored = (await recordAt(subject, 'screening')).values;
    for (const field of ['sbp', 'hr']) {
      const chain = changes.filter((c) => c.field_code === field);
      // Every value each writer sent differs from the one before it: each request is exactly one change.
      expect(chain, field).to.have.length(2 * ROUNDS);
      let previous = VITALS[field as 'sbp' | 'hr'];
      for (const change of chain) {
        expect(change.old_value, `${field}: each change starts from the value the previous one left`).to.equal(previous);
        previous = change.new_value;
      }
      expect(previous, `${field}: the last change is the stored value`).to.equal(stored[field]);
    }
    // The sbp and hr changes of one request are adjacent rows by the key that sent that pair.
    for (let i = 0; i < changes.length; i += 2) {
      const pair = changes.slice(i, i + 2);
      expect(pair.map((c) => c.field_code)).to.have.members(['sbp', 'hr']);
      const [sbp, hr] = ['sbp', 'hr'].map((field) => pair.find((c) => c.field_code === field)!);
      const writer = writers[sent.get(`${sbp.new_value}/${hr.new_value}`)!];
      expect([sbp.author, hr.author, sbp.actor_id]).to.deep.equal([`${writer.name} (API)`, `${writer.name} (API)`, writer.id]);
    }
    expect(new Set(changes.map((c) => c.author))).to.have.property('size', 2);
  });

  it('saves a form both keys send first with update at the same moment once, and applies the other as an update of it', async () => {
    const enrolled = await app.call('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    for (let round = 0; round < ROUNDS; round++) {
      const values: [Row, Row] = [vitalsOf(round, { sbp: '125', hr: '66' }), vitalsOf(round, { sbp: '145', hr: '88' })];
      const results = await race({ subject, ...placeOf(round) }, values, true);
      expect(results.map((r) => [r.status, r.code]), `round ${round}`).to.deep.equal([['ok', 'saved'], ['ok', 'saved']]);
      expect(results[0].record_id).to.equal(results[1].record_id);
      const audit = await auditOf(results[0].record_id);
      const set = audit.filter((a) => a.action === 'record.value_set');
      const changed = audit.filter((a) => a.action === 'record.value_changed');
      expect(set, 'the insert: one row per value').to.have.length(4);
      const first = set[0].actor_id === writers[0].id ? 0 : 1;
      expect(set.every((a) => a.actor_id === writers[first].id)).to.equal(true);
      // The other writer's values then replace the two that differ, each audited once, from the inserted value.
      expect(changed.map((a) => [a.field_code, a.old_value, a.new_value, a.actor_id])).to.have.deep.members([
        ['sbp', values[first].sbp, values[1 - first].sbp, writers[1 - first].id],
        ['hr', values[first].hr, values[1 - first].hr, writers[1 - first].id],
      ]);
      const stored = await app.db.knex('records').where({ id: results[0].record_id }).first('values');
      expect(stored.values).to.deep.equal(values[1 - first]);
    }
  });
});
