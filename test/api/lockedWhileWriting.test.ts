import { expect } from 'chai';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { inTransaction } from '../../src/db/stores.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { giveConsent, operator } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** Dated inside week 4's window of a patient enrolled on 2026-01-06. */
const VITALS = { vsdate: '2026-02-03', sbp: '120', dbp: '80', hr: '70' };

describe('a study locked while a write to it is under way', () => {
  const { app, world } = useStudyWorld();

  afterEach(() => inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: false })));

  /** Waits until a statement of the service waits for a row lock, as a write behind another writer of the same form does. */
  async function blockedOnRowLock(): Promise<void> {
    for (let tries = 0; tries < 500; tries++) {
      const waiting = await app.db.knex.raw<{ rows: unknown[] }>(`select 1 from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike '%records%'`);
      if (waiting.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the write never waited for the row lock');
  }

  it('refuses with 423 study_locked, changing nothing, a records call that would commit after the lock', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'female', birth_year: 1960, enrolled_on: '2026-01-06' },
    });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject);
    const first = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
      key: world.key, body: { records: [{ subject, visit: 'week4', form: 'vs', values: VITALS }] },
    });
    const recordId = present(at(first.body.results, 0).record_id, 'the saved record');

    // Another writer of the same form holds it: the records call below is admitted, then waits for it.
    const other = await app.db.knex.transaction();
    let change: Promise<{ status: number; body: unknown }> | undefined;
    try {
      await other('records').where({ id: recordId }).forUpdate().select('id');
      change = app.call('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: [{ subject, visit: 'week4', form: 'vs', values: { ...VITALS, hr: '99' }, update: true }] },
      });
      await blockedOnRowLock();
      await inTransaction(app.db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: true }));
    } finally {
      await other.commit();
    }
    const answer = (await change) as { status: number; body: Problem };
    expect(answer.status, JSON.stringify(answer.body)).to.equal(423);
    expect(answer.body.code).to.equal('study_locked');
    const record = await app.db.knex('records').where({ id: recordId }).first<{ values: Record<string, string> } | undefined>('values');
    expect(record?.values.hr).to.equal('70');
    // Nothing in the trail after the lock: the chain's order is the order the changes took effect in.
    const lock = present(await app.db.knex('audit_events').where({ action: 'study.settings_changed', field_code: 'locked', new_value: 'true' })
      .orderBy('id', 'desc').first<{ id: number } | undefined>('id'), 'the lock\'s audit row');
    expect(await app.db.knex('audit_events').where('id', '>', lock.id).select('action')).to.deep.equal([]);
  });
});
