import { expect } from 'chai';
import type { Actor } from '../../src/domain/actor.js';
import { submitRecords, type RecordInput, type WriteAccess } from '../../src/domain/records/submitRecords.js';
import { loadStudy } from '../../src/domain/studies/loadStudy.js';
import type { Study } from '../../src/domain/stores.js';
import { demoDesign } from '../helpers/factories.js';
import { fakeStores, type FakeStores } from '../helpers/fakeStores.js';
import { at, only } from '../helpers/only.js';

/**
 * The one write path for form data (submitRecords) over in-memory stores: each outcome, and what it
 * leaves in the stores, without a database. The API tests (test/api/records.test.ts) cover the same
 * rules through HTTP; here a rule's effect on records, queries and audit rows is read directly.
 */

const key: Actor = { kind: 'api_key', keyId: 7, keyName: 'Hospital EHR', makerId: 3 };
// Dated inside the screening window (days -28 to -14 from the enrolment on 2026-01-02), so only the checks a test means open queries.
const normal = { vsdate: '2025-12-15', sbp: '120', dbp: '80', hr: '70' };
const vs = (values: Record<string, string>, more: Partial<RecordInput> = {}): RecordInput => ({ subject: '01-001', visit: 'screening', form: 'vs', values, ...more });

describe('records: submitRecords over fake stores', () => {
  let stores: FakeStores;
  let study: Study;
  let access: WriteAccess;
  const submit = (inputs: RecordInput[], options: { validateOnly?: boolean } = {}) =>
    submitRecords(stores, key, access, study, inputs, { validateOnly: options.validateOnly ?? false, source: 'api' });

  beforeEach(async () => {
    stores = fakeStores();
    await loadStudy(stores.studies, demoDesign());
    study = (await stores.studies.findByCode('DEMO'))!;
    const site01 = at(await stores.studies.sites(study), 0, 'the sites');
    access = { siteIds: [site01.id], unblinded: false };
    for (const subject of ['01-001', '01-002']) {
      await stores.patients.insert({ studyId: study.id, siteId: site01.id, subject, sex: 'female', birthYear: 1970, enrolledOn: '2026-01-02' });
    }
    const consenting = (await stores.patients.findBySubject(study.id, '01-001'))!;
    await stores.patients.insertConsent(consenting.id, { givenOn: '2026-01-02', withdrawnOn: null, dataUseWithdrawn: false });
  });

  it('saves a new record with an audit row for each value, authored by the key', async () => {
    const outcome = only(await submit([vs(normal)]), 'the outcomes');
    expect(outcome).to.include({ status: 'ok', code: 'saved', queriesOpened: 0 });
    const record = only(stores.records.rows, 'the records');
    expect(outcome.recordId).to.equal(record.id);
    expect(record).to.deep.include({ status: 'complete', values: normal, source: 'api', instance: 1 });
    expect(stores.audit.entries.map((e) => [e.action, e.fieldCode, e.oldValue, e.newValue])).to.have.deep.members(
      Object.entries(normal).map(([field, value]) => ['record.value_set', field, null, value]),
    );
    expect([...new Set(stores.audit.entries.map((e) => e.author))]).to.deep.equal(['Hospital EHR (API)']);
    expect(stores.queries.rows).to.deep.equal([]);
  });

  it('skips a record that is already filled and sent without `update`, changing nothing', async () => {
    await submit([vs(normal)]);
    const auditBefore = stores.audit.entries.length;
    const outcome = only(await submit([vs({ ...normal, hr: '90' })]), 'the outcomes');
    expect(outcome).to.include({ status: 'skip', code: 'already_filled', recordId: stores.records.rows[0]?.id });
    expect(stores.records.rows[0]?.values.hr).to.equal('70');
    expect(stores.audit.entries).to.have.length(auditBefore);
  });

  it('updates a record with `update`: changed values only, each audited with its old and new value', async () => {
    await submit([vs(normal)]);
    const auditBefore = stores.audit.entries.length;
    const outcome = only(await submit([vs({ ...normal, hr: '88' }, { update: true })]), 'the outcomes');
    expect(outcome).to.include({ status: 'ok', code: 'saved' });
    expect(stores.records.rows).to.have.length(1);
    expect(stores.records.rows[0]?.values).to.deep.equal({ ...normal, hr: '88' });
    expect(stores.audit.entries.slice(auditBefore).map((e) => [e.action, e.fieldCode, e.oldValue, e.newValue]))
      .to.deep.equal([['record.value_changed', 'hr', '70', '88']]);
  });

  it('saves a value out of range with `warn`, opening a range query and auditing it', async () => {
    const outcome = only(await submit([vs({ ...normal, sbp: '240' })]), 'the outcomes');
    expect(outcome).to.include({ status: 'warn', code: 'saved_with_queries', queriesOpened: 1 });
    expect(outcome.issues.map((i) => [i.field, i.params?.variant])).to.deep.equal([['sbp', 'above']]);
    expect(stores.records.rows[0]?.values.sbp).to.equal('240');
    expect(stores.queries.rows.map((q) => [q.fieldCode, q.origin, q.status, q.recordId, q.openedBy]))
      .to.deep.equal([['sbp', 'range', 'open', stores.records.rows[0]?.id, 'Hospital EHR (API)']]);
    const opened = stores.audit.entries.filter((e) => e.action === 'query.opened');
    expect(opened.map((e) => [e.fieldCode, e.details])).to.deep.equal([['sbp', { query_id: stores.queries.rows[0]?.id }]]);
  });

  it('closes the range query when an update corrects the value, and audits the change and the closing', async () => {
    await submit([vs({ ...normal, sbp: '240' })]);
    const auditBefore = stores.audit.entries.length;
    const outcome = only(await submit([vs(normal, { update: true })]), 'the outcomes');
    expect(outcome).to.include({ status: 'ok', code: 'saved', queriesOpened: 0 });
    expect(stores.queries.rows.map((q) => [q.fieldCode, q.status])).to.deep.equal([['sbp', 'closed']]);
    expect(stores.audit.entries.slice(auditBefore).map((e) => [e.action, e.fieldCode, e.oldValue, e.newValue])).to.deep.equal([
      ['record.value_changed', 'sbp', '240', '120'],
      ['query.closed', 'sbp', undefined, undefined],
    ]);
  });

  it('refuses the record of a patient at a site the writer may not reach as if the patient did not exist', async () => {
    const site02 = at(await stores.studies.sites(study), 1, 'the sites');
    const other = await stores.patients.insert({ studyId: study.id, siteId: site02.id, subject: '02-001', sex: 'male', birthYear: 1980, enrolledOn: '2026-01-02' });
    await stores.patients.insertConsent(other.id, { givenOn: '2026-01-02', withdrawnOn: null, dataUseWithdrawn: false });
    const outcome = only(await submit([vs(normal, { subject: '02-001' })]), 'the outcomes');
    expect(outcome).to.include({ status: 'error', code: 'unknown_subject' });
    expect(outcome.params).to.deep.equal({ subject: '02-001' });
    expect(stores.records.rows).to.deep.equal([]);
  });

  it('refuses the record of a patient without consent, writing nothing', async () => {
    const outcome = only(await submit([vs(normal, { subject: '01-002' })]), 'the outcomes');
    expect(outcome).to.include({ status: 'error', code: 'consent_missing', recordId: null });
    expect(outcome.params).to.deep.equal({ subject: '01-002' });
    expect(stores.records.rows).to.deep.equal([]);
    expect(stores.audit.entries).to.deep.equal([]);
  });

  it('refuses a record a rejecting edit check fails, naming the check, writing nothing', async () => {
    const outcome = only(await submit([vs({ sbp: '120', dbp: '80', hr: '70' }, { status: 'draft' })]), 'the outcomes');
    expect(outcome).to.include({ status: 'error', code: 'edit_check_failed' });
    expect(outcome.issues.map((i) => [i.field, i.code])).to.deep.equal([['vsdate', 'edit_check:vsdate_with_values']]);
    expect(stores.records.rows).to.deep.equal([]);
    expect(stores.audit.entries).to.deep.equal([]);
  });

  it('with validate_only reports what would happen and saves nothing: no record, query or audit row', async () => {
    const outcomes = await submit([vs({ ...normal, sbp: '240' }), vs(normal, { subject: '01-002' })], { validateOnly: true });
    expect(outcomes.map((o) => [o.status, o.code, o.queriesOpened])).to.deep.equal([['warn', 'validated', 1], ['error', 'consent_missing', 0]]);
    expect(outcomes[0]?.recordId).to.equal(null);
    expect(stores.records.rows).to.deep.equal([]);
    expect(stores.queries.rows).to.deep.equal([]);
    expect(stores.audit.entries).to.deep.equal([]);
  });
});
