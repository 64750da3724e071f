import { expect } from 'chai';
import type { Actor } from '../../src/domain/actor.js';
import { submitRecords, type WriteAccess } from '../../src/domain/records/submitRecords.js';
import { loadStudy } from '../../src/domain/studies/loadStudy.js';
import type { Study } from '../../src/domain/stores.js';
import { checkWebhookUrl, isPublicAddress } from '../../src/domain/webhooks/addressPolicy.js';
import { givesUp, LONGEST_RETRY_MS, retryDelayMs } from '../../src/domain/webhooks/retrySchedule.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/domain/webhooks/webhookEvents.js';
import { loadSpec } from '../../src/handlers/spec.js';
import { demoDesign } from '../helpers/factories.js';
import { fakeStores, type FakeStores } from '../helpers/fakeStores.js';
import { at } from '../helpers/only.js';

describe('webhooks: the rules', () => {
  describe('the spec declares every event the service sends, as operations the handler map leaves out', () => {
    const spec = loadSpec() as { webhooks: Record<string, { post: { operationId: string } }> };
    it('lists exactly the domain\'s event types, each named on<Event>Webhook', () => {
      expect(Object.keys(spec.webhooks)).to.deep.equal([...WEBHOOK_EVENT_TYPES]);
      for (const [type, item] of Object.entries(spec.webhooks)) expect(item.post.operationId, type).to.match(/^on[A-Z][A-Za-z]*Webhook$/);
    });
  });

  describe('isPublicAddress', () => {
    const cases: [string, boolean][] = [
      ['8.8.8.8', true], ['2606:4700:4700::1111', true], ['::ffff:8.8.8.8', true],
      ['127.0.0.1', false], ['10.0.0.1', false], ['172.16.5.4', false], ['192.168.1.1', false], ['169.254.169.254', false],
      ['100.64.0.1', false], ['0.0.0.0', false], ['::1', false], ['::', false], ['fd00::1', false], ['fe80::1', false],
      ['::ffff:127.0.0.1', false], ['::ffff:c0a8:101', false], ['not an address', false],
    ];
    for (const [address, expected] of cases) it(`${address}: ${expected ? 'public' : 'not public'}`, () => expect(isPublicAddress(address)).to.equal(expected));
  });

  it('accepts http and inside addresses only when the operator allows them', () => {
    expect(checkWebhookUrl('http://127.0.0.1:9000/in', { allowInsecure: true }).href).to.equal('http://127.0.0.1:9000/in');
    expect(() => checkWebhookUrl('http://127.0.0.1:9000/in', { allowInsecure: false })).to.throw('webhook_url_refused');
    expect(() => checkWebhookUrl('https://169.254.169.254/latest', { allowInsecure: false })).to.throw('webhook_url_refused');
    expect(() => checkWebhookUrl('ftp://example.org/in', { allowInsecure: true })).to.throw('webhook_url_refused');
  });

  it('backs off exponentially from 5 s to an hour, and gives up after 24 hours', () => {
    const middle = () => 0.5;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, middle))).to.deep.equal([5_000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(30, middle)).to.equal(LONGEST_RETRY_MS);
    const start = new Date('2026-01-01T00:00:00Z');
    expect(givesUp(start, new Date('2026-01-01T23:59:59Z'))).to.equal(false);
    expect(givesUp(start, new Date('2026-01-02T00:00:00Z'))).to.equal(true);
  });

  describe('submitRecords publishes its events in the transaction of the change', () => {
    const key: Actor = { kind: 'api_key', keyId: 7, keyName: 'Hospital EHR', makerId: 3 };
    let stores: FakeStores;
    let study: Study;
    let access: WriteAccess;
    beforeEach(async () => {
      stores = fakeStores();
      await loadStudy(stores.studies, demoDesign());
      study = (await stores.studies.findByCode('DEMO'))!;
      const site01 = at(await stores.studies.sites(study), 0, 'the sites');
      access = { siteIds: [site01.id], unblinded: true };
      const patient = await stores.patients.insert({ studyId: study.id, siteId: site01.id, subject: '01-001', sex: 'female', birthYear: 1970, enrolledOn: '2026-01-02' });
      await stores.patients.insertConsent(patient.id, { givenOn: '2026-01-02', withdrawnOn: null, dataUseWithdrawn: false });
    });
    const vs = (values: Record<string, string>, update = false) => ({ subject: '01-001', visit: 'screening', form: 'vs', values, update });

    it('record.saved, then its queries; record.changed with the changed codes and the query it closed; nothing with validate_only', async () => {
      await submitRecords(stores, key, access, study, [vs({ vsdate: '2025-12-15', sbp: '232', dbp: '80', hr: '70' })], { validateOnly: true, source: 'api' });
      expect(stores.webhooks.published).to.deep.equal([]);
      await submitRecords(stores, key, access, study, [vs({ vsdate: '2025-12-15', sbp: '232', dbp: '80', hr: '70' })], { validateOnly: false, source: 'api' });
      const where = { study: 'DEMO', subject: '01-001', site: '01', visit: 'screening', instance: 1, form: 'vs' };
      const [queryId] = stores.queries.rows.map((q) => q.id);
      expect(stores.webhooks.published).to.deep.equal([
        { studyId: study.id, type: 'record.saved', data: { ...where, fields: ['dbp', 'hr', 'sbp', 'vsdate'] }, unblindedOnly: false },
        { studyId: study.id, type: 'query.opened', data: { ...where, fields: ['sbp'], query_id: queryId }, unblindedOnly: false },
      ]);
      stores.webhooks.published.length = 0;
      await submitRecords(stores, key, access, study, [vs({ sbp: '121' }, true)], { validateOnly: false, source: 'api' });
      expect(stores.webhooks.published).to.deep.equal([
        { studyId: study.id, type: 'record.changed', data: { ...where, fields: ['sbp'] }, unblindedOnly: false },
        { studyId: study.id, type: 'query.closed', data: { ...where, fields: ['sbp'], query_id: queryId }, unblindedOnly: false },
      ]);
    });

    it('marks an event about a form of the unblinded team, so that only unblinded subscriptions get it', async () => {
      await submitRecords(stores, key, access, study, [{ subject: '01-001', visit: 'baseline', form: 'ip_alloc', values: { kit: 'K-1', arm: 'A' } }], { validateOnly: false, source: 'api' });
      expect(stores.webhooks.published.map((e) => [e.type, e.data.form, e.unblindedOnly])).to.deep.equal([['record.saved', 'ip_alloc', true]]);
    });
  });
});
