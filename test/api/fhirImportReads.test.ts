import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { countItems } from '../../src/domain/fhir/fhirImportItem.js';
import { inTransaction } from '../../src/db/stores.js';
import { up as backfillUnblindedTeamItems } from '../../src/db/migrations/20261126100100_backfill_unblinded_team_items.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { addPerson, demoDesign, giveConsent, makeKey, operator } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import type { Reply } from '../helpers/testApp.js';

/**
 * The read calls on FHIR imports (listFhirImports, getFhirImport; issue 22.1) through real HTTP: a review
 * import read back `proposed`, then `confirmed` or `rejected` after the site team's decision on the review
 * page, with the decider, the reason and each item's outcome; the list's filters and paging; the read
 * rules (sites, blinded forms, withdrawn data use) and the read log.
 */

type Read = AnswerOf<'getFhirImport', 200>;
type Item = Read['items'][number];
type Listed = AnswerOf<'listFhirImports', 200>;

/** Buster Hoeger (Synthea): male, born 1988; enrolled on 2016-12-28 his 2016-12-14 measurements fall in the screening window. */
const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json');
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An item as the FHIR call answered it: without the outcome the read adds. */
function withoutOutcome(item: Item): Omit<Item, 'outcome'> {
  const copy: Omit<Item, 'outcome'> & { outcome?: Item['outcome'] } = { ...item };
  delete copy.outcome;
  return copy;
}

describe('FHIR import outcomes (listFhirImports, getFhirImport)', () => {
  // The lab results go to a form of the unblinded team here, so a blinded key has items it may not see.
  const { app, world } = useStudyWorld({ design: demoDesign('DEMO', (d) => { present(d.forms.find((f) => f.code === 'lab_hem'), 'form lab_hem').team = 'unblinded'; }) });
  let nurse: PortalClient;
  let blindedKey: string;
  let siteTwoKey: string;
  let writeOnlyKey: string;

  before(async () => {
    // Unblinded: the files hold lab values of the unblinded team, and only its members end such an import (importDecision.ts).
    await addStaff(app.db.knex, 'nurse@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'], unblinded: true }, 'Nina Nurse');
    nurse = new PortalClient(app.baseUrl);
    expect((await nurse.signIn('nurse@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
    await addPerson(app.db.knex, world.code, 'blinded-manager@sdx.test', { role: 'manager', canExport: true, unblinded: false });
    blindedKey = (await makeKey(app.db.knex, { study: world.code, by: 'blinded-manager@sdx.test', name: 'Blinded sponsor' })).key;
    siteTwoKey = (await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Site 02 system', sites: ['02'] })).key;
    writeOnlyKey = (await makeKey(app.db.knex, { study: world.code, by: world.manager, name: 'Lab', canRead: false })).key;
  });

  const base = () => `/api/v1/studies/${world.code}/fhir`;
  /** getFhirImport; a refusal's body is read as `Reply<Problem>` by naming it. */
  const getImport = <T = Read>(id: string, key = world.key) => app.call<T>('GET', `${base()}/${encodeURIComponent(id)}`, { key });
  /** listFhirImports; a refusal's body is read as `Reply<Problem>` by naming it. */
  const list = <T = Listed>(query: Record<string, string>, key = world.key) => app.call<T>('GET', `${base()}?${new URLSearchParams(query)}`, { key });

  /** A form saved at screening before the file is sent. */
  type SavedForm = { visit: string; form: string; values: Record<string, string> };
  /** Two of its values differ from Buster's file. */
  const VITAL_SIGNS: SavedForm = { visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '140', dbp: '85', hr: '70' } };

  /** A patient at site 01 with the `saved` forms (vital signs unless told), and Buster's file sent in `mode` by the unblinded key. */
  async function sent(mode = 'review', saved: SavedForm[] = [VITAL_SIGNS]): Promise<{ subject: string; id: string; url: string; items: Item[] }> {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    if (saved.length > 0) {
      const submitted = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `/api/v1/studies/${world.code}/records`, {
        key: world.key, body: { records: saved.map((form) => ({ subject, ...form })) },
      });
      expect(submitted.body.counts.ok + submitted.body.counts.warn, JSON.stringify(submitted.body)).to.equal(saved.length);
    }
    const res = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `${base()}?subject=${subject}&mode=${mode}`, { key: world.key, raw: BUSTER, contentType: 'application/fhir+json' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { subject, id: res.body.import, url: new URL(res.body.review_url).pathname, items: res.body.items };
  }

  const positionOf = (items: Item[], visit: string, form: string, field: string) => items.findIndex((i) => i.visit === visit && i.form === form && i.field === field && i.state !== 'skipped');

  async function readBack(id: string, key = world.key): Promise<Read> {
    const res = await getImport(id, key);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body;
  }

  it('reads a review import back as proposed, then confirmed on the review page, with the decider and each item\'s outcome', async () => {
    const { subject, id, url, items } = await sent();
    const proposed = await readBack(id);
    expect(proposed).to.include({ import: id, number: 1, subject, site: '01', status: 'proposed', needs_review: true, mode: 'review', decided_at: null, decided_by: null, rejection_reason: null });
    expect(proposed.created_at).to.match(ISO_UTC).and.equal(proposed.updated_at);
    expect(new URL(proposed.review_url).pathname).to.equal(url);
    // Every item as the FHIR call returned it, with what became of it so far.
    expect(proposed.items.map(withoutOutcome)).to.deep.equal(items);
    const waiting = (i: Item) => i.state === 'new' || i.state === 'conflict' || i.tie === true;
    expect(proposed.items.filter(waiting).map((i) => i.outcome)).to.satisfy((o: string[]) => o.length > 0 && o.every((x) => x === 'pending'));
    expect(proposed.items.filter((i) => i.state === 'same').map((i) => i.outcome)).to.include('same').and.not.include('pending');

    const sbp = positionOf(items, 'screening', 'vs', 'sbp');
    const dbp = positionOf(items, 'screening', 'vs', 'dbp');
    const weight = positionOf(items, 'screening', 'vs', 'weight');
    const height = positionOf(items, 'screening', 'dm', 'height');
    expect(at(items, dbp), 'a second conflict, whose saved value the nurse keeps').to.include({ state: 'conflict', saved_value: '85' });
    await nurse.get(url);
    const decided = await nurse.post(url, { decision: 'confirm_chosen', [`take_${weight}`]: 'on', [`conflict_${sbp}`]: 'replace' });
    expect(decided.status).to.equal(303);

    const confirmed = await readBack(id);
    expect(confirmed).to.include({ status: 'confirmed', needs_review: false, decided_by: 'Nina Nurse', rejection_reason: null });
    expect(confirmed.decided_at).to.match(ISO_UTC).and.equal(confirmed.updated_at);
    expect(Date.parse(String(confirmed.decided_at))).to.be.at.least(Date.parse(present(confirmed.created_at, 'created_at')));
    const outcome = (position: number) => at(confirmed.items, position).outcome;
    expect([outcome(sbp), outcome(weight), outcome(dbp), outcome(height)]).to.deep.equal(['confirmed', 'confirmed', 'kept_saved_value', 'not_taken']);
    expect(at(confirmed.items, sbp)).to.include({ state: 'saved', value: '136' });
    expect(at(confirmed.items, dbp).state).to.equal('conflict');
    expect(confirmed.counts).to.deep.equal(countItems(confirmed.items));
    expect(confirmed.items.filter((i) => i.state === 'skipped' && !i.tie).every((i) => i.outcome === 'skipped')).to.equal(true);
    expect(confirmed.items.map((i) => i.outcome)).to.not.include('pending');
  });

  it('reads a rejection back with the person and the reason they gave; nothing of it was saved', async () => {
    const { id, url, subject } = await sent();
    await nurse.get(url);
    expect((await nurse.post(url, { decision: 'reject', reason: '  Wrong patient file from the lab  ' })).status).to.equal(303);
    const records = await app.call<AnswerOf<'listFormRecords', 200>>('GET', `/api/v1/studies/${world.code}/records?subject=${subject}`, { key: world.key });
    expect(records.body.records.map((r) => [r.form, r.values.sbp])).to.deep.equal([['vs', '140']]);
    const rejected = await readBack(id);
    expect(rejected).to.include({ status: 'rejected', decided_by: 'Nina Nurse', rejection_reason: 'Wrong patient file from the lab' });
    expect(rejected.decided_at).to.match(ISO_UTC);
    const outcomes = new Set(rejected.items.map((i) => i.outcome));
    expect([...outcomes].sort()).to.deep.equal(['rejected', 'same', 'skipped']);
  });

  it('names the sending key as the decider of an import save mode saved at once, never an e-mail', async () => {
    const { id } = await sent('save', []);
    const saved = await readBack(id);
    expect(saved).to.include({ status: 'saved', mode: 'save', decided_by: 'Test system (API)', needs_review: false });
    expect(saved.decided_at).to.equal(saved.created_at);
    expect(saved.items.filter((i) => i.state === 'saved').length).to.be.above(0);
    expect(saved.items.filter((i) => i.state === 'saved').every((i) => i.outcome === 'saved')).to.equal(true);
    const all = JSON.stringify((await list({})).body);
    expect(all).to.not.include('@sdx.test');
  });

  it('lists imports by subject and status, pages them by keyset, and gives what was decided since a watermark', async () => {
    const first = await sent();
    const second = await sent();
    const everything = await list({ limit: '1000' });
    expect(everything.status).to.equal(200);
    const ids = everything.body.imports.map((i) => i.import);
    expect(ids).to.include.members([first.id, second.id]);
    expect(at(everything.body.imports, 0)).to.have.all.keys('import', 'number', 'subject', 'site', 'status', 'needs_review', 'mode', 'counts', 'review_url',
      'created_at', 'updated_at', 'decided_at', 'decided_by', 'rejection_reason');

    // One page at a time, in the order of their making, each import once.
    const paged: string[] = [];
    let after: string | null = null;
    do {
      const page: Reply<Listed> = await list({ limit: '1', ...(after ? { after } : {}) });
      expect(page.status, JSON.stringify(page.body)).to.equal(200);
      expect(page.body.imports.length).to.be.at.most(1);
      paged.push(...page.body.imports.map((i) => i.import));
      after = page.body.next;
    } while (after);
    expect(paged).to.deep.equal(ids);

    const bySubject = await list({ subject: first.subject });
    expect(bySubject.body.imports.map((i) => i.import)).to.deep.equal([first.id]);
    expect((await list({ subject: '99-999' })).body.imports).to.deep.equal([]);
    const proposedOnly = (await list({ status: 'proposed', limit: '1000' })).body.imports;
    expect(proposedOnly.map((i) => i.import)).to.include.members([first.id, second.id]);
    expect(proposedOnly.every((i) => i.status === 'proposed')).to.equal(true);

    // A token is good only with the filters it was issued for; wrong filters and unknown parameters are 400.
    const firstPage = await list({ limit: '1' });
    expect((await list<Problem>({ limit: '1', status: 'proposed', after: String(firstPage.body.next) })).body.code).to.equal('invalid_after');
    const wrong = await list<Problem>({ status: 'maybe', mode: 'review' });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.errors?.map((e) => e.pointer)).to.include.members(['/query/status', '/query/mode']);

    // The next incremental load gives the import decided since the watermark, and not the one still waiting.
    const watermark = everything.body.watermark;
    await nurse.get(second.url);
    expect((await nurse.post(second.url, { decision: 'reject' })).status).to.equal(303);
    const since = await list({ updated_since: watermark, limit: '1000' });
    const sinceIds = since.body.imports.map((i) => i.import);
    expect(sinceIds).to.include(second.id);
    expect(since.body.imports.find((i) => i.import === second.id)).to.include({ status: 'rejected', decided_by: 'Nina Nurse', rejection_reason: null });
    const later = await list({ updated_since: new Date(Date.now() + 60_000).toISOString() });
    expect(later.body.imports).to.deep.equal([]);
  });

  it('shows a key only its own sites\' imports, and refuses one it may not see like one that does not exist', async () => {
    const { id } = await sent();
    expect((await list({ limit: '1000' }, siteTwoKey)).body.imports).to.deep.equal([]);
    // The site 02 key asks for a site 01 import; the study's own key for identifiers that name no import.
    const refused: [string, string][] = [[id, siteTwoKey], ['nonsense', world.key], [`OTHER-${id.slice(world.code.length + 1)}`, world.key],
      [`${id}0`, world.key], [`${world.code}-99-999-1`, world.key]];
    for (const [other, key] of refused) {
      const res = await getImport<Problem>(other, key);
      expect(res.status, other).to.equal(404);
      expect(res.body).to.include({ code: 'fhir_import_not_found' });
      expect(res.body.detail).to.equal(`No FHIR import "${other}" is available to this API key.`);
    }
    const ru = await app.call<Problem>('GET', `${base()}/nonsense?lang=ru`, { key: world.key });
    expect(ru.body.detail).to.equal('FHIR-импорт "nonsense" недоступен этому API-ключу.');
    const writeOnly = await getImport<Problem>(id, writeOnlyKey);
    expect([writeOnly.status, writeOnly.body.code]).to.deep.equal([403, 'right_missing']);
    expect((await list({}, writeOnlyKey)).status).to.equal(403);
  });

  it('leaves the unblinded team\'s items out for a blinded key, and counts only what it shows', async () => {
    const { id, subject } = await sent();
    const full = await readBack(id);
    const blinded = await readBack(id, blindedKey);
    const hidden = full.items.filter((i) => i.form === 'lab_hem');
    expect(hidden.length, 'the file has lab results').to.be.above(0);
    expect(blinded.items).to.deep.equal(full.items.filter((i) => i.form !== 'lab_hem'));
    expect(JSON.stringify(blinded)).to.not.include('lab_hem');
    expect(blinded.counts).to.deep.equal(countItems(blinded.items));
    expect(blinded.counts.values).to.be.below(full.counts.values);
    const listed = (await list({ subject }, blindedKey)).body.imports;
    expect(listed.map((i) => i.counts)).to.deep.equal([blinded.counts]);
    expect((await list({ subject })).body.imports.map((i) => i.counts)).to.deep.equal([full.counts]);
  });

  it('shows a blinded key no audit row of an import that holds the unblinded team\'s items, whose counts would tell them', async () => {
    const { id, subject } = await sent();
    const full = await readBack(id);
    const blinded = await readBack(id, blindedKey);
    type Trail = AnswerOf<'listAuditTrail', 200>;
    const importRows = async (key: string) => (await app.call<Trail>('GET', `/api/v1/studies/${world.code}/audit?subject=${subject}`, { key })).body.audit
      .filter((r) => r.action.startsWith('fhir.import_'));
    const unblindedRows = await importRows(world.key);
    expect(unblindedRows.map((r) => [r.action, r.details.counts])).to.deep.equal([['fhir.import_proposed', full.counts]]);
    // The counts of that row count the hidden lab values: a blinded key would learn how many there are and how many conflict.
    expect(full.counts).to.not.deep.equal(blinded.counts);
    expect(await importRows(blindedKey)).to.deep.equal([]);
    // An import of the blinded key's own holds no hidden item: its row is shown.
    const own = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `${base()}?subject=${subject}`, { key: blindedKey, raw: BUSTER, contentType: 'application/fhir+json' });
    expect(own.status, JSON.stringify(own.body).slice(0, 400)).to.equal(201);
    expect((await importRows(blindedKey)).map((r) => [r.action, r.details.number, r.details.counts])).to.deep.equal([['fhir.import_proposed', own.body.number, own.body.counts]]);
    // The import says when it is made whether it holds such an item; the migration said it of the imports made before.
    const flags = () => app.db.knex('fhir_imports as i').join('patients as p', 'p.id', 'i.patient_id').where('p.subject', subject).orderBy('i.number').pluck<boolean[]>('i.unblinded_team_items');
    expect(await flags()).to.deep.equal([true, false]);
    await app.db.knex('fhir_imports').update({ unblinded_team_items: false });
    await backfillUnblindedTeamItems(app.db.knex);
    expect(await flags()).to.deep.equal([true, false]);
  });

  it('makes a blinded key sending again a file that still waits an import of its own: no unblinded team\'s item nor saved value', async () => {
    // The unblinded team's haematology is saved, so the unblinded key's import holds its saved values beside the file's.
    const { subject, id, items } = await sent('review', [VITAL_SIGNS, { visit: 'screening', form: 'lab_hem', values: { hgb: '9.9', wbc: '9.99', plt: '999', hct: '33.3' } }]);
    expect(items.filter((i) => i.form === 'lab_hem').map((i) => i.saved_value), 'the unblinded key sees the saved haematology').to.include('999');
    const again = await app.call<AnswerOf<'importFhirRecord', 201>>('POST', `${base()}?subject=${subject}&mode=review`, { key: blindedKey, raw: BUSTER, contentType: 'application/fhir+json' });
    expect(again.status, JSON.stringify(again.body)).to.equal(201);
    expect(again.body.import).to.not.equal(id);
    expect(JSON.stringify(again.body)).to.not.include('lab_hem');
    expect(again.body.counts).to.deep.equal(countItems(again.body.items));
  });

  it('makes an unblinded key sending again a file a blinded key sent an import of its own, with the unblinded team\'s values', async () => {
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', sex: 'male', birth_year: 1988, enrolled_on: '2016-12-28' },
    });
    const subject = enrolled.body.subject;
    await giveConsent(app.db.knex, world.code, subject, '2016-12-01');
    const send = (key: string) => app.call<AnswerOf<'importFhirRecord', 201>>('POST', `${base()}?subject=${subject}&mode=review`, { key, raw: BUSTER, contentType: 'application/fhir+json' });
    const blinded = await send(blindedKey);
    expect(blinded.status).to.equal(201);
    expect(blinded.body.items.filter((i) => i.form === 'lab_hem')).to.deep.equal([]);
    const unblinded = await send(world.key);
    expect(unblinded.status, 'not answered with the blinded key\'s import').to.equal(201);
    expect(unblinded.body.import).to.not.equal(blinded.body.import);
    expect(unblinded.body.items.filter((i) => i.form === 'lab_hem' && i.state === 'new')).to.not.deep.equal([]);
    // Each key sending its file again gets its own import back.
    expect((await send(blindedKey)).body.import).to.equal(blinded.body.import);
    expect((await send(world.key)).body.import).to.equal(unblinded.body.import);
  });

  it('never shows the imports of a patient who withdrew consent to data use', async () => {
    const { id, subject } = await sent();
    expect((await list({ subject })).body.imports).to.have.length(1);
    const watermark = (await list({ subject })).body.watermark;
    await inTransaction(app.db.knex, (stores) => recordConsent(stores, operator, { study: world.code, subject, change: { withdrawn: '2017-01-10', dataUse: true } }));
    expect((await list({ subject })).body.imports).to.deep.equal([]);
    expect((await getImport(id)).status).to.equal(404);
    const since = await list({ subject, updated_since: watermark });
    expect(since.body.removed.map((r) => r.subject)).to.deep.equal([subject]);
  });

  it('enters every read in the read log with its filters and rows; a refused one is not a read', async () => {
    const { id, subject } = await sent();
    const keyId = world.keyId;
    const before = Number((await app.db.knex('read_log').max<{ id: number | null }>({ id: 'id' }).first())?.id ?? 0);
    await list({ subject, status: 'proposed' });
    await getImport(id);
    await getImport('nonsense');
    const logged = await app.db.knex('read_log').where('id', '>', before).orderBy('id').select('api_key_id', 'operation', 'filters', 'rows');
    expect(logged).to.deep.equal([
      { api_key_id: keyId, operation: 'fhir_imports', filters: { subject, status: 'proposed', limit: 500 }, rows: 1 },
      { api_key_id: keyId, operation: 'fhir_import', filters: { import: id }, rows: 1 },
    ]);
  });
});
