import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent, makeKey } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply } from '../helpers/testApp.js';

/**
 * Two integrators, each with its own key, write the same form instance at the same moment (issue 10,
 * item 3): no lost update, one insert wins and the other is told the form is filled, and every value
 * change has exactly one audit row whose old value is the value the previous change left.
 * A FHIR save racing a records call on the same empty places fills only what is still empty when it writes.
 */

/** A form's values, or the place of a record (subject, visit, instance). */
type Row = Record<string, string>;
type Submitted = AnswerOf<'submitFormRecords', 200>;
type Result = Submitted['results'][number];
/** The audit trail's columns these tests read. */
interface AuditRow { record_id: number | null; action: string; field_code: string; old_value: string | null; new_value: string | null; author: string; actor_id: number | null }

const ROUNDS = 12;
const VITALS = { vsdate: '2026-03-02', sbp: '120', dbp: '80', hr: '70' };
/** A vital-signs date inside each visit's window for the patients below, enrolled on 2026-03-01: any other opens a query (issue 19.7). */
const VISIT_DAY: Record<string, string> = { screening: '2026-02-15', baseline: '2026-03-02', week4: '2026-03-29', week12: '2026-05-24', unscheduled: '2026-03-02' };

interface Writer { name: string; key: string; id: number }

/** A fresh form instance each round: the four planned visits, then instances 1, 2, … of the repeating one. */
function placeOf(round: number): { visit: string; instance?: number } {
  const planned = ['screening', 'baseline', 'week4', 'week12'];
  return round < planned.length ? { visit: at(planned, round) } : { visit: 'unscheduled', instance: round - planned.length + 1 };
}

/** The vital signs of a round, dated inside its visit's window. */
const vitalsOf = (round: number, over: Row): Row => ({ ...VITALS, vsdate: present(VISIT_DAY[placeOf(round).visit], 'the visit\'s day'), ...over });

describe('two keys writing the same form at the same moment', () => {
  const { app, world } = useStudyWorld();
  let writers: [Writer, Writer];

  const submit = (writer: Writer, record: Record<string, unknown>): Promise<Reply<Submitted>> =>
    app.call<Submitted>('POST', `/api/v1/studies/${world.code}/records`, { key: writer.key, body: { records: [record] } });

  /** Both writers' vital signs for one place, sent together: each answer is one HTTP 200, whose one result is returned. */
  async function race(place: Record<string, unknown>, values: [Row, Row], update: boolean): Promise<Result[]> {
    const replies = await Promise.all(writers.map((w, i) => submit(w, { ...place, form: 'vs', values: values[i], ...(update ? { update: true } : {}) })));
    for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return replies.map((r) => at(r.body.results, 0));
  }

  /** The stored values of the record of a subject's visit. */
  const valuesAt = async (subject: string, visit: string): Promise<Row> => present(await app.db.knex('records as r')
    .join('patients as p', 'p.id', 'r.patient_id').join('visits as v', 'v.id', 'r.visit_id')
    .where({ 'p.subject': subject, 'v.code': visit }).first<{ values: Row } | undefined>('r.values'), `the ${visit} record of ${subject}`).values;
  /** The stored values of a record. */
  const valuesOf = async (recordId: number | null | undefined): Promise<Row> =>
    present(await app.db.knex('records').where({ id: present(recordId, 'a record id') }).first<{ values: Row } | undefined>('values'), `record ${recordId}`).values;
  const auditOf = (recordId: number | null | undefined): Promise<AuditRow[]> => app.db.knex<AuditRow>('audit_events').where({ record_id: present(recordId, 'a record id') }).orderBy('id')
    .select('action', 'field_code', 'old_value', 'new_value', 'author', 'actor_id');

  before(async () => {
    const made = await Promise.all(['Hospital EHR', 'Central lab'].map(async (name) => ({ name, ...(await makeKey(app.db.knex, { study: world.code, by: world.manager, name })) })));
    writers = [at(made, 0), at(made, 1)];
  });

  it('saves a form both keys send first at the same moment once: one insert wins, the other answers skip already_filled', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'male', birth_year: 1958, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    for (let round = 0; round < ROUNDS; round++) {
      const values: [Row, Row] = [vitalsOf(round, { sbp: String(130 + round), hr: '61' }), vitalsOf(round, { sbp: String(170 + round), hr: '91' })];
      const outcomes = await race({ subject, ...placeOf(round) }, values, false);
      const winner = outcomes.findIndex((o) => o.status === 'ok');
      expect(outcomes.map((o) => o.code).sort(), `round ${round}`).to.deep.equal(['already_filled', 'saved']);
      const [won, lost] = [at(outcomes, winner), at(outcomes, 1 - winner)];
      const wonValues = at(values, winner);
      const wonBy = at(writers, winner);
      expect(lost).to.include({ status: 'skip', code: 'already_filled', record_id: won.record_id });

      expect(await valuesOf(won.record_id), `round ${round}: the winner's values, all of them`).to.deep.equal(wonValues);
      const audit = await auditOf(won.record_id);
      expect(audit.map((a) => [a.action, a.field_code, a.new_value])).to.have.deep.members(Object.entries(wonValues).map(([field, value]) => ['record.value_set', field, value]));
      expect(audit.every((a) => a.author === `${wonBy.name} (API)` && a.actor_id === wonBy.id), 'every row by the winning key').to.equal(true);
    }
    const records = await app.db.knex('records as r').join('patients as p', 'p.id', 'r.patient_id').where('p.subject', subject).count<{ n: string }[]>({ n: '*' });
    expect(Number(at(records, 0).n)).to.equal(ROUNDS);
  });

  it('applies both keys\' updates sent at the same moment one after the other: nothing lost, one audit row per change, an unbroken old-value chain', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '02', sex: 'female', birth_year: 1964, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    const first = await submit(writers[0], { subject, visit: 'screening', form: 'vs', values: { ...VITALS, vsdate: present(VISIT_DAY.screening, 'the screening day') } });
    const id = at(first.body.results, 0).record_id;
    /** The pair of values each writer sent in each round, to tell who made each change. */
    const sent = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      // Both fields change together and never repeat a value: a torn write or a lost change would show.
      const values: [Row, Row] = [{ sbp: String(100 + 2 * round), hr: String(50 + 2 * round) }, { sbp: String(101 + 2 * round), hr: String(51 + 2 * round) }];
      values.forEach((v, i) => sent.set(`${v.sbp}/${v.hr}`, i));
      const outcomes = await race({ subject, visit: 'screening' }, values, true);
      expect(outcomes.map((o) => [o.status, o.code, o.record_id]), `round ${round}`).to.deep.equal([['ok', 'saved', id], ['ok', 'saved', id]]);
      const stored = await valuesAt(subject, 'screening');
      expect([values[0], values[1]].map((v) => `${v.sbp}/${v.hr}`), `round ${round}: the stored pair is one writer's, whole`).to.include(`${stored.sbp}/${stored.hr}`);
    }

    const audit = await auditOf(id);
    const changes = audit.filter((a) => a.action === 'record.value_changed');
    const stored = await valuesAt(subject, 'screening');
    for (const field of ['sbp', 'hr']) {
      const chain = changes.filter((c) => c.field_code === field);
      // Every value each writer sent differs from the one before it: each request is exactly one change.
      expect(chain, field).to.have.length(2 * ROUNDS);
      let previous: string | null = VITALS[field as 'sbp' | 'hr'];
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
      const [sbp, hr] = [present(pair.find((c) => c.field_code === 'sbp'), 'the sbp change'), present(pair.find((c) => c.field_code === 'hr'), 'the hr change')];
      const writer = at(writers, present(sent.get(`${sbp.new_value}/${hr.new_value}`), 'the writer of the pair'));
      expect([sbp.author, hr.author, sbp.actor_id]).to.deep.equal([`${writer.name} (API)`, `${writer.name} (API)`, writer.id]);
    }
    expect(new Set(changes.map((c) => c.author))).to.have.property('size', 2);
  });

  it('saves a form both keys send first with update at the same moment once, and applies the other as an update of it', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-01' } });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    for (let round = 0; round < ROUNDS; round++) {
      const values: [Row, Row] = [vitalsOf(round, { sbp: '125', hr: '66' }), vitalsOf(round, { sbp: '145', hr: '88' })];
      const results = await race({ subject, ...placeOf(round) }, values, true);
      expect(results.map((r) => [r.status, r.code]), `round ${round}`).to.deep.equal([['ok', 'saved'], ['ok', 'saved']]);
      const recordId = at(results, 0).record_id;
      expect(recordId).to.equal(at(results, 1).record_id);
      const audit = await auditOf(recordId);
      const set = audit.filter((a) => a.action === 'record.value_set');
      const changed = audit.filter((a) => a.action === 'record.value_changed');
      expect(set, 'the insert: one row per value').to.have.length(4);
      const first = at(set, 0).actor_id === writers[0].id ? 0 : 1;
      const [inserted, updated] = [at(values, first), at(values, 1 - first)];
      expect(set.every((a) => a.actor_id === at(writers, first).id)).to.equal(true);
      // The other writer's values then replace the two that differ, each audited once, from the inserted value.
      expect(changed.map((a) => [a.field_code, a.old_value, a.new_value, a.actor_id])).to.have.deep.members([
        ['sbp', inserted.sbp, updated.sbp, at(writers, 1 - first).id],
        ['hr', inserted.hr, updated.hr, at(writers, 1 - first).id],
      ]);
      expect(await valuesOf(recordId)).to.deep.equal(updated);
    }
  });

  it('lets a FHIR save racing a records call only fill what is empty: the values, table rows and not-done marks the call sends always stand', async () => {
    // Buster Hoeger (Synthea): his file proposes a weight, a haemoglobin and conditions at screening, all on empty places.
    const file = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');
    const sent = {
      vs: { values: { weight: '90.0' } },
      mh: { tables: { conditions: [{ term: 'Asthma' }] }, status: 'draft' },
      lab_hem: { not_done: { hgb: 'ND' }, status: 'draft' },
    };
    for (let round = 0; round < ROUNDS / 2; round++) {
      const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' } });
      const subject = enrolled.body.subject;
      await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
      const vitals = await submit(writers[1], { subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '80', hr: '70' } });
      expect(at(vitals.body.results, 0).status).to.equal('ok');
      const [imported, written] = await Promise.all([
        app.call<AnswerOf<'importFhirRecord', 201>>('POST', `/api/v1/studies/${world.code}/fhir?subject=${subject}&mode=save`, { key: writers[0].key, raw: file, contentType: 'application/fhir+json' }),
        app.call<Submitted>('POST', `/api/v1/studies/${world.code}/records`, {
          key: writers[1].key, body: { records: Object.entries(sent).map(([form, content]) => ({ subject, visit: 'screening', form, ...content, update: true })) },
        }),
      ]);
      expect(imported.status, JSON.stringify(imported.body)).to.equal(201);
      expect(written.body.results.map((r) => r.status), `round ${round}`).to.deep.equal(['ok', 'warn', 'warn']);
      const read = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}&visit=screening`, { key: world.key });
      const saved = (form: string) => present(read.body.records.find((r) => r.form === form), `the ${form} record`);
      expect(saved('vs').values.weight, `round ${round}: the weight`).to.equal('90.0');
      expect(saved('mh').tables, `round ${round}: the conditions`).to.deep.equal({ conditions: [{ term: 'Asthma' }] });
      expect([saved('lab_hem').not_done.hgb, saved('lab_hem').values.hgb], `round ${round}: the haemoglobin`).to.deep.equal(['ND', undefined]);
      // Whichever came first, each change starts from the value the one before it left.
      for (const [form, field] of [['vs', 'weight'], ['mh', 'conditions'], ['lab_hem', 'hgb']] as const) {
        const trail = await app.db.knex<AuditRow>('audit_events').where({ record_id: saved(form).id, field_code: field }).orderBy('id').select('old_value', 'new_value');
        trail.reduce<string | null>((previous, row) => {
          expect(row.old_value, `round ${round}: ${form}.${field}`).to.equal(previous);
          return row.new_value;
        }, null);
      }
    }
  });
});
