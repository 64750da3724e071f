/// <reference types="fhir" />
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Actor } from '../../src/domain/actor.js';
import { authenticateKey } from '../../src/domain/apiKeys/authenticateKey.js';
import type { KeyContext } from '../../src/domain/apiKeys/keyContext.js';
import { DomainError } from '../../src/domain/errors.js';
import type { FhirImportItem } from '../../src/domain/fhir/fhirImportItem.js';
import { importFhirRecord } from '../../src/domain/fhir/importFhirRecord.js';
import { fhirJsonEntries } from '../helpers/fhirFiles.js';
import { confirmImport, rejectImport, type ItemChoice, type Person } from '../../src/domain/fhir/importDecision.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { submitRecords, type RecordInput } from '../../src/domain/records/submitRecords.js';
import { changeStudySettings } from '../../src/domain/studies/studySettings.js';
import { createStores, inTransaction } from '../../src/db/stores.js';
import type { Database } from '../../src/db/knex.js';
import { addPerson, createStudyWorld, demoDesign, giveConsent, operator, type StudyWorld } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

/**
 * The site team's decision on a proposed FHIR import (src/domain/fhir/importDecision.ts) on PostgreSQL:
 * who may decide, what a confirmation saves (through the one write path) and audits, the identity it
 * links, and that every refusal leaves the import proposed and the eCRF untouched.
 */

/** The columns of the tables these tests read directly. */
interface RecordRow { status: string; source: string; values: Record<string, string>; tables: Record<string, Record<string, string>[]> }
interface AuditEventRow {
  id: number; patient_id: number | null; actor_type: string; action: string; field_code: string | null; old_value: string | null; new_value: string | null; actor_id: number | null; author: string;
  reason: string | null; details: Record<string, unknown> | null;
}
interface FhirImport {
  patient_id: number; number: number; status: string; decided_by: number | null; decided_at: Date | null; items: { state: string }[]; counts: Record<string, number>;
}
interface Patient { id: number; fhir_identity: { system: string; value: string }[] | null }

const BUSTER = readFileSync('test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json', 'utf8');
/** Buster Hoeger's bundle (male, born 1988), with one change. */
function buster(change: (bundle: fhir4.Bundle) => void = () => undefined): string {
  const bundle = JSON.parse(BUSTER) as fhir4.Bundle;
  change(bundle);
  return JSON.stringify(bundle);
}
const otherIdentifiers = (bundle: fhir4.Bundle) => {
  const patient = present(bundle.entry?.find((e) => e.resource?.resourceType === 'Patient')?.resource, 'the Patient') as fhir4.Patient;
  patient.identifier = [{ system: 'http://hospital.example.org/mrn', value: 'MRN-777' }];
};

describe('confirmImport and rejectImport', function () {
  this.timeout(60_000);
  let db: Database;
  let world: StudyWorld;
  let key: KeyContext;
  let people: Record<'staff01' | 'staff02' | 'manager02' | 'outsider' | 'manager-demo', Person>;
  let seq = 0;

  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    world = await createStudyWorld(db.knex);
    await addPerson(db.knex, world.code, 'staff01@sdx.test', { role: 'site_staff', sites: ['01'] });
    await addPerson(db.knex, world.code, 'staff02@sdx.test', { role: 'site_staff', sites: ['02'] });
    await addPerson(db.knex, world.code, 'manager02@sdx.test', { role: 'manager', sites: ['02'] });
    await inTransaction(db.knex, (s) => s.people.insertUser({ email: 'outsider@sdx.test', name: 'outsider', passwordHash: null }));
    const person = async (email: string) => present(await createStores(db.knex).people.findUserByEmail(email), email);
    people = {
      staff01: await person('staff01@sdx.test'), staff02: await person('staff02@sdx.test'), manager02: await person('manager02@sdx.test'),
      outsider: await person('outsider@sdx.test'), 'manager-demo': await person(world.manager),
    };
    key = await authenticateKey(createStores(db.knex).apiKeys, world.key);
  });

  /** A new patient of site 01 enrolled as Buster Hoeger (2016-12-14 is day −14, screening), with consent. */
  async function patient(): Promise<{ subject: string; id: number }> {
    seq += 1;
    const subject = `R-${seq}`;
    const stores = createStores(db.knex);
    const study = (await stores.studies.findByCode(world.code))!;
    const site = (await stores.studies.sites(study)).find((s) => s.number === '01')!;
    const row = await stores.patients.insert({ studyId: study.id, siteId: site.id, subject, sex: 'male', birthYear: 1988, enrolledOn: '2016-12-28' });
    await giveConsent(db.knex, world.code, subject, '2016-12-01');
    return { subject, id: row.id };
  }

  async function importFile(subject: string, body: string, mode: 'review' | 'save' = 'review') {
    return inTransaction(db.knex, async (s) => importFhirRecord(s, key, (await s.studies.findByCode(world.code))!, { subject, mode, entries: fhirJsonEntries(body) }));
  }

  /** Saves records as the API key would (data that was there before the import). */
  async function saveAsApi(records: RecordInput[]): Promise<void> {
    const actor: Actor = { kind: 'api_key', keyId: key.keyId, keyName: key.keyName, makerId: key.makerId };
    const outcomes = await inTransaction(db.knex, async (s) =>
      submitRecords(s, actor, { siteIds: key.siteIds, unblinded: true }, (await s.studies.findByCode(world.code))!, records, { validateOnly: false, source: 'api' }));
    expect(outcomes.map((o) => o.status)).to.not.include('error');
  }

  const confirm = (person: Person, subject: string, number: number, choices?: Record<number, ItemChoice>) =>
    inTransaction(db.knex, (s) => confirmImport(s, person, { study: world.code, subject, number, choices }));
  const reject = (person: Person, subject: string, number: number, reason?: string) =>
    inTransaction(db.knex, (s) => rejectImport(s, person, { study: world.code, subject, number, reason }));

  async function refusal(attempt: Promise<unknown>): Promise<DomainError> {
    const error = await attempt.then(() => undefined, (e: unknown) => e);
    expect(error, 'the call was refused').to.be.instanceOf(DomainError);
    return error as DomainError;
  }

  async function records(patientId: number): Promise<Partial<Record<string, RecordRow>>> {
    const rows = await db.knex('records as r').join('visits as v', 'v.id', 'r.visit_id').join('forms as f', 'f.id', 'r.form_id')
      .where('r.patient_id', patientId).select<(RecordRow & { visit: string; form: string })[]>('r.*', 'v.code as visit', 'f.code as form');
    return Object.fromEntries(rows.map((r) => [`${r.visit}|${r.form}`, r]));
  }

  const importRow = async (patientId: number, number: number) =>
    present(await db.knex<FhirImport>('fhir_imports').where({ patient_id: patientId, number }).first(), `import ${number}`);
  const patientRow = async (id: number) => present(await db.knex<Patient>('patients').where({ id }).first(), `patient ${id}`);
  const position = (items: FhirImportItem[], visit: string, form: string, field: string, row: number | null = null) =>
    items.findIndex((i) => i.visit === visit && i.form === form && i.field === field && i.row === row && i.state !== 'skipped');

  it('confirms the chosen items: fills new places, replaces or keeps each conflict as chosen, leaves the rest out', async () => {
    const p = await patient();
    await saveAsApi([
      { subject: p.subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '130', dbp: '80' }, status: 'draft' },
      { subject: p.subject, visit: 'screening', form: 'lab_hem', values: { hgb: '15', wbc: '6' }, status: 'draft' },
    ]);
    const proposed = await importFile(p.subject, buster());
    const items = proposed.items;
    const at = (form: string, field: string, row: number | null = null) => position(items, 'screening', form, field, row);
    expect([items[at('vs', 'sbp')]?.state, items[at('vs', 'dbp')]?.state, items[at('vs', 'vsdate')]?.state, items[at('vs', 'weight')]?.state]).to.deep.equal(['conflict', 'same', 'same', 'new']);
    expect([items[at('lab_hem', 'hgb')]?.state, items[at('lab_hem', 'wbc')]?.state, items[at('lab_hem', 'hct')]?.state, items[at('lab_hem', 'plt')]?.state]).to.deep.equal(['conflict', 'conflict', 'new', 'new']);

    const choices: Record<number, ItemChoice> = {
      [at('vs', 'sbp')]: 'replace',
      [at('vs', 'weight')]: 'fill',
      [at('lab_hem', 'hgb')]: 'keep',
      [at('lab_hem', 'hct')]: 'fill',
      [at('dm', 'height')]: 'fill',
      [at('dm', 'weight')]: 'fill',
      [at('mh', 'conditions.term', 1)]: 'fill',
      [at('mh', 'conditions.onset', 1)]: 'fill',
    };
    const result = await confirm(people.staff01, p.subject, proposed.number, choices);
    // A table row is taken as one: filling two cells of the second Condition fills all its new cells.
    const secondCondition = items.flatMap((i, n) => (i.form === 'mh' && i.row === 1 && i.state === 'new' ? [n] : []));
    expect(secondCondition.length).to.be.greaterThan(2);
    const chosen = [...new Set([...Object.keys(choices).map(Number).filter((n) => choices[n] !== 'keep'), ...secondCondition])].sort((a, b) => a - b);
    expect(result).to.deep.include({ number: 1, status: 'confirmed', saved: chosen, kept: [at('lab_hem', 'hgb')], identityLinked: true });

    const saved = await records(p.id);
    expect(saved['screening|vs']?.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '136', dbp: '80', weight: '81.0' });
    expect(saved['screening|lab_hem']?.values).to.deep.equal({ hgb: '15', wbc: '6', hct: '35.5' });
    expect(saved['screening|dm']).to.deep.include({ status: 'draft', source: 'fhir', values: { height: '185.8', weight: '81.0' } });
    // The second Condition, whole, as the table's first row.
    expect(saved['screening|mh']?.tables).to.deep.equal({
      conditions: [Object.fromEntries(secondCondition.map((n) => [items[n]?.field?.split('.')[1], items[n]?.value]))],
    });
    expect(saved['screening|mh']?.tables.conditions?.[0]).to.include({ term: 'Viral sinusitis (disorder)', onset: '2011-10-04', code: '444814009' });

    const trail = await db.knex<AuditEventRow>('audit_events').where({ patient_id: p.id, actor_type: 'user' }).orderBy('id');
    const changed = trail.filter((a) => a.action === 'record.value_changed');
    // Filling an empty field of a saved record is a change too, audited with no old value.
    expect(changed.map((a) => [a.field_code, a.old_value, a.new_value])).to.deep.equal([['sbp', '130', '136'], ['weight', null, '81.0'], ['hct', null, '35.5']]);
    expect(changed[0]).to.include({ actor_id: people.staff01.id, author: 'staff01', reason: 'Taken from FHIR import 1, confirmed in the portal' });
    const decision = trail.find((a) => a.action === 'fhir.import_confirmed')!;
    expect(decision).to.include({ author: 'staff01', reason: 'FHIR import 1 confirmed on the patient\'s card' });
    const waiting = items.flatMap((i, n) => ((i.state === 'new' || i.state === 'conflict') && !(n in choices) && !secondCondition.includes(n) ? [n] : []));
    expect(waiting).to.include.members([at('lab_hem', 'wbc'), at('lab_hem', 'plt'), at('mh', 'conditions.code', 0)]);
    expect(decision.details).to.deep.include({ number: 1, saved: chosen, kept: [at('lab_hem', 'hgb')], left_out: waiting });

    const stored = await importRow(p.id, 1);
    expect(stored).to.include({ status: 'confirmed', decided_by: people.staff01.id });
    expect(stored.decided_at).to.be.instanceOf(Date);
    const states = stored.items.map((item) => item.state);
    expect(states.filter((s) => s === 'saved')).to.have.length(chosen.length);
    expect(chosen.every((n) => states[n] === 'saved')).to.equal(true);
    expect([states[at('vs', 'sbp')], states[at('lab_hem', 'hgb')], states[at('lab_hem', 'wbc')], states[at('lab_hem', 'plt')]]).to.deep.equal(['saved', 'conflict', 'conflict', 'new']);
    expect(stored.counts).to.deep.equal(result.counts);
    expect(result.counts).to.include({ saved: chosen.length, conflicts: 2 });

    // The first confirmed import links the hospital's identifiers; a later file must carry one of them.
    const linked = (await patientRow(p.id)).fhir_identity;
    expect(linked).to.deep.include({ system: 'http://hospital.smarthealthit.org', value: 'ad2e3fc5-2b5d-4cb9-8d03-9ea0f4ac8423' });
    expect(trail.filter((a) => a.action === 'patient.fhir_identity_linked')).to.have.length(1);
    const other = await refusal(importFile(p.subject, buster(otherIdentifiers)));
    expect(other.code).to.equal('fhir_identity_mismatch');
    expect((await importFile(p.subject, buster())).number).to.equal(2);
  });

  it('refuses a second decision on the same import', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    await confirm(people.staff01, p.subject, 1);
    for (const attempt of [() => confirm(people.staff01, p.subject, 1), () => reject(people.staff01, p.subject, 1)]) {
      const error = await refusal(attempt());
      expect(error.code).to.equal('import_already_decided');
      expect(error.params).to.deep.include({ status: 'confirmed', number: 1 });
    }
    expect((await importRow(p.id, 1)).status).to.equal('confirmed');
  });

  it('takes one of two decisions made at the same time and refuses the other', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    const outcomes = await Promise.allSettled([confirm(people.staff01, p.subject, 1), reject(people['manager-demo'], p.subject, 1)]);
    const done = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as DomainError] : []));
    expect(done).to.have.length(1);
    expect(refused.map((e) => e.code)).to.deep.equal(['import_already_decided']);
    const stored = await importRow(p.id, 1);
    expect(stored.status).to.equal((done[0] as PromiseFulfilledResult<{ status: string }>).value.status);
    const decisions = await db.knex<AuditEventRow>('audit_events').where({ patient_id: p.id }).whereIn('action', ['fhir.import_confirmed', 'fhir.import_rejected']);
    expect(decisions).to.have.length(1);
  });

  it('refuses anyone but the site team of the patient’s site and the study’s managers, and keeps nothing', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    const before = await db.knex<AuditEventRow>('audit_events').count('* as n').first();
    for (const person of [people.staff02, people.manager02, people.outsider]) {
      for (const attempt of [() => confirm(person, p.subject, 1), () => reject(person, p.subject, 1)]) {
        expect((await refusal(attempt())).code).to.equal('import_decision_not_allowed');
      }
    }
    // Nobody outside the site learns whether a patient exists.
    expect((await refusal(confirm(people.staff02, 'NO-SUCH', 1))).code).to.equal('import_decision_not_allowed');
    expect((await refusal(confirm(people.staff01, p.subject, 7))).code).to.equal('import_not_found');
    expect(await importRow(p.id, 1)).to.include({ status: 'proposed', decided_by: null });
    expect(await records(p.id)).to.deep.equal({});
    expect(await db.knex<AuditEventRow>('audit_events').count('* as n').first()).to.deep.equal(before);
  });

  it('lets a manager of all sites confirm: without choices every new item fills its place and every conflict keeps its value', async () => {
    const p = await patient();
    await saveAsApi([{ subject: p.subject, visit: 'screening', form: 'lab_hem', values: { hgb: '14' }, status: 'draft' }]);
    const proposed = await importFile(p.subject, buster());
    const result = await confirm(people['manager-demo'], p.subject, 1);
    const fresh = proposed.items.flatMap((i, n) => (i.state === 'new' ? [n] : []));
    expect(result.saved).to.deep.equal(fresh);
    expect(result.kept).to.deep.equal([position(proposed.items, 'screening', 'lab_hem', 'hgb')]);
    const saved = await records(p.id);
    expect(saved['screening|lab_hem']?.values).to.deep.equal({ hgb: '14', wbc: '5.98', plt: '284', hct: '35.5' });
    expect(saved['screening|vs']?.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '136', dbp: '80', weight: '81.0' });
    expect(saved['screening|mh']?.tables.conditions).to.have.length(2);
    // No saved value was replaced: every change filled an empty field.
    expect(await db.knex<AuditEventRow>('audit_events').where({ patient_id: p.id, action: 'record.value_changed' }).whereNotNull('old_value')).to.deep.equal([]);
  });

  it('rejects: saves nothing, links no identity, and audits the decision with its reason', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    const result = await reject(people.staff01, p.subject, 1, 'wrong encounter');
    expect(result).to.include({ status: 'rejected', number: 1 });
    expect(await importRow(p.id, 1)).to.include({ status: 'rejected', decided_by: people.staff01.id });
    expect(await records(p.id)).to.deep.equal({});
    expect((await patientRow(p.id)).fhir_identity).to.equal(null);
    const audit = await db.knex<AuditEventRow>('audit_events').where({ patient_id: p.id, action: 'fhir.import_rejected' }).first();
    expect(audit).to.include({ author: 'staff01', actor_type: 'user', reason: 'FHIR import 1 rejected on the patient\'s card: wrong encounter' });
    // Files of other identifiers are still accepted: nothing was linked.
    expect((await importFile(p.subject, buster(otherIdentifiers))).number).to.equal(2);
  });

  it('refuses a choice that does not fit the item, keeping the import proposed', async () => {
    const p = await patient();
    await saveAsApi([{ subject: p.subject, visit: 'screening', form: 'lab_hem', values: { hgb: '14', hct: '35.5' }, status: 'draft' }]);
    const { items } = await importFile(p.subject, buster());
    const wrong: [number, ItemChoice][] = [
      [position(items, 'screening', 'lab_hem', 'plt'), 'replace'],
      [position(items, 'screening', 'lab_hem', 'hgb'), 'fill'],
      [position(items, 'screening', 'lab_hem', 'hct'), 'fill'],
      [items.findIndex((i) => i.state === 'skipped'), 'fill'],
      [items.length, 'fill'],
      [position(items, 'screening', 'lab_hem', 'plt'), 'candidate:0'], // no tie
    ];
    for (const [at, choice] of wrong) {
      const error = await refusal(confirm(people.staff01, p.subject, 1, { [at]: choice }));
      expect(error.code).to.equal('invalid_import_choice');
      expect(error.params).to.deep.include({ position: String(at), choice });
    }
    expect((await importRow(p.id, 1)).status).to.equal('proposed');
    expect(Object.keys(await records(p.id))).to.deep.equal(['screening|lab_hem']);
  });

  it('saves a tie only with a candidate picked for it, and refuses a pick out of range or a plain fill', async () => {
    const p = await patient();
    // Two haemoglobin results at one instant with different values: a tie.
    const { items } = await importFile(p.subject, buster((bundle) => {
      const hgb = present(bundle.entry?.find((e) => e.resource?.id === '55f8c6fb-eb5c-4ad9-869b-fd7540654851'), 'the haemoglobin result');
      const resource = hgb.resource as fhir4.Observation;
      const twin = { fullUrl: 'urn:uuid:0f1e2d3c-0000-4000-8000-0000000000b1', resource: { ...structuredClone(resource), id: '0f1e2d3c-0000-4000-8000-0000000000b1', valueQuantity: { ...resource.valueQuantity, value: 9.1 } } };
      bundle.entry?.push({ ...structuredClone(hgb), ...twin });
    }));
    const tie = items.findIndex((i) => i.tie === true);
    expect(items[tie]).to.include({ field: 'hgb', value: null, state: 'skipped' });
    expect(items[tie]?.candidates.map((c) => c.value)).to.deep.equal(['15.5', '9.1']);
    for (const choice of ['candidate:2', 'fill'] as ItemChoice[]) {
      expect((await refusal(confirm(people.staff01, p.subject, 1, { [tie]: choice }))).code).to.equal('invalid_import_choice');
    }
    const result = await confirm(people.staff01, p.subject, 1, { [tie]: 'candidate:1' });
    expect(result.saved).to.deep.equal([tie]);
    expect((await records(p.id))['screening|lab_hem']?.values).to.deep.equal({ hgb: '9.1' });
  });

  it('refuses when a chosen place changed after the import was made, saving nothing', async () => {
    const p = await patient();
    await saveAsApi([{ subject: p.subject, visit: 'screening', form: 'vs', values: { vsdate: '2016-12-14', sbp: '130' }, status: 'draft' }]);
    const { items } = await importFile(p.subject, buster());
    const sbp = position(items, 'screening', 'vs', 'sbp');
    const weight = position(items, 'screening', 'vs', 'weight');
    const hct = position(items, 'screening', 'lab_hem', 'hct');
    await saveAsApi([{ subject: p.subject, visit: 'screening', form: 'vs', values: { sbp: '125', weight: '80' }, status: 'draft', update: true }]);
    const error = await refusal(confirm(people.staff01, p.subject, 1, { [sbp]: 'replace', [weight]: 'fill', [hct]: 'fill' }));
    expect(error.code).to.equal('import_outdated');
    expect(error.params.positions).to.deep.equal([sbp, weight].sort((a, b) => a - b));
    const saved = await records(p.id);
    expect(saved['screening|vs']?.values).to.deep.equal({ vsdate: '2016-12-14', sbp: '125', weight: '80' });
    expect(saved['screening|lab_hem']).to.equal(undefined);
    expect((await importRow(p.id, 1)).status).to.equal('proposed');
  });

  /**
   * Confirms filling haemoglobin and haematocrit while another writer's haematology record commits right
   * after the confirmation locked that (then unsaved) form instance and found it empty, and right before
   * the write path reads it again: the narrowest race, forced.
   */
  async function confirmRacing(values: Record<string, string>) {
    const p = await patient();
    const { items, number } = await importFile(p.subject, buster());
    const hgb = position(items, 'screening', 'lab_hem', 'hgb');
    const hct = position(items, 'screening', 'lab_hem', 'hct');
    expect([items[hgb]?.state, items[hct]?.state]).to.deep.equal(['new', 'new']);
    let injected = false;
    const attempt = inTransaction(db.knex, (s) => {
      const findByKeys = s.records.findByKeys.bind(s.records);
      let calls = 0;
      s.records.findByKeys = async (keys, options) => {
        if (++calls === 2 && !injected) {
          injected = true;
          await saveAsApi([{ subject: p.subject, visit: 'screening', form: 'lab_hem', values, status: 'draft' }]);
        }
        return findByKeys(keys, options);
      };
      return confirmImport(s, people.staff01, { study: world.code, subject: p.subject, number, choices: { [hgb]: 'fill', [hct]: 'fill' } });
    });
    const outcome = await attempt.then(() => null, (e: unknown) => e);
    expect(injected, 'the other writer came in between').to.equal(true);
    return { p, number, hgb, outcome, saved: (await records(p.id))['screening|lab_hem'] };
  }

  it('checks a form instance another writer saves between the check and the write, never overwriting its value', async () => {
    const { p, number, hgb, outcome, saved } = await confirmRacing({ hgb: '15', wbc: '6' });
    expect(outcome).to.be.instanceOf(DomainError).and.to.include({ code: 'import_outdated' });
    expect((outcome as DomainError).params.positions).to.deep.equal([hgb]);
    expect(saved?.values).to.deep.equal({ hgb: '15', wbc: '6' });
    expect((await importRow(p.id, number)).status).to.equal('proposed');
  });

  it('fills the empty places of a form instance another writer saves between the check and the write, keeping its values', async () => {
    const { p, number, outcome, saved } = await confirmRacing({ wbc: '6' });
    expect(outcome).to.equal(null);
    expect(saved).to.deep.include({ status: 'draft', values: { wbc: '6', hgb: '15.5', hct: '35.5' } });
    expect((await importRow(p.id, number)).status).to.equal('confirmed');
  });

  it('refuses the whole confirmation when the checks refuse a chosen record (vital signs without their date), saving nothing', async () => {
    const p = await patient();
    const { items } = await importFile(p.subject, buster());
    const at = (form: string, field: string) => position(items, 'screening', form, field);
    const error = await refusal(confirm(people.staff01, p.subject, 1, { [at('vs', 'sbp')]: 'fill', [at('vs', 'dbp')]: 'fill', [at('lab_hem', 'hct')]: 'fill' }));
    expect(error.code).to.equal('import_items_refused');
    // The edit check is on vsdate, which was not chosen: the error points at the record's first chosen item.
    expect(error.fieldErrors).to.deep.equal([{
      pointer: `/items/${Math.min(at('vs', 'sbp'), at('vs', 'dbp'))}`, code: 'edit_check:vsdate_with_values',
      params: { message: 'Enter the date of the measurements', message_ru: 'Укажите дату измерений', record: 'edit_check_failed' },
    }]);
    // The haematology record was written before the vital signs were refused: the transaction took it back.
    expect(await records(p.id)).to.deep.equal({});
    expect((await importRow(p.id, 1)).status).to.equal('proposed');
  });

  it('refuses a confirmation in a locked study or without valid consent; a rejection stays possible', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    await inTransaction(db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: true }));
    try {
      expect((await refusal(confirm(people.staff01, p.subject, 1))).code).to.equal('study_locked');
    } finally {
      await inTransaction(db.knex, (s) => changeStudySettings(s, operator, world.code, { locked: false }));
    }
    await inTransaction(db.knex, (s) => recordConsent(s, operator, { study: world.code, subject: p.subject, change: { withdrawn: '2017-01-01', dataUse: false } }));
    expect((await refusal(confirm(people.staff01, p.subject, 1))).code).to.equal('consent_missing');
    expect(await records(p.id)).to.deep.equal({});
    expect((await reject(people.staff01, p.subject, 1)).status).to.equal('rejected');
  });

  it('refuses to confirm an import whose identifiers differ from an identity linked after it was made', async () => {
    const p = await patient();
    await importFile(p.subject, buster());
    await importFile(p.subject, buster(otherIdentifiers));
    expect((await confirm(people.staff01, p.subject, 1, {})).identityLinked).to.equal(true);
    const error = await refusal(confirm(people.staff01, p.subject, 2));
    expect(error.code).to.equal('fhir_identity_mismatch');
    expect(await importRow(p.id, 2)).to.include({ status: 'proposed' });
    expect((await reject(people.staff01, p.subject, 2)).status).to.equal('rejected');
  });

  it('gives nothing to decide on an import that save mode saved in full', async () => {
    const p = await patient();
    const saved = await importFile(p.subject, buster(), 'save');
    expect(saved.status).to.equal('saved');
    const error = await refusal(confirm(people.staff01, p.subject, 1));
    expect(error.code).to.equal('import_already_decided');
    expect(error.params.status).to.equal('saved');
  });
});

describe('a FHIR import with values on forms of the unblinded team', function () {
  this.timeout(60_000);
  let db: Database;
  let code: string;
  let blinded: Person;
  let unblinded: Person;
  let key: KeyContext;

  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    // The demo design, blinded, with the haematology lab a form of the unblinded team.
    const world = await createStudyWorld(db.knex, demoDesign('BLINDFX', (d) => {
      d.blinded = true;
      d.forms.find((f) => f.code === 'lab_hem')!.team = 'unblinded';
    }));
    code = world.code;
    await addPerson(db.knex, code, 'blinded-staff@sdx.test', { role: 'site_staff', sites: ['01'], unblinded: false });
    await addPerson(db.knex, code, 'unblinded-staff@sdx.test', { role: 'site_staff', sites: ['01'], unblinded: true });
    const person = async (email: string): Promise<Person> => present(await createStores(db.knex).people.findUserByEmail(email), email);
    blinded = await person('blinded-staff@sdx.test');
    unblinded = await person('unblinded-staff@sdx.test');
    key = await authenticateKey(createStores(db.knex).apiKeys, world.key); // made by the unblinded manager
  });

  /** A patient of site 01 with an import proposing a haemoglobin (unblinded team) and an ALT (everyone), and their positions. */
  async function proposedImport(subject: string) {
    const stores = createStores(db.knex);
    const study = present(await stores.studies.findByCode(code), 'study');
    const site = present((await stores.studies.sites(study)).find((s) => s.number === '01'), 'site 01');
    await stores.patients.insert({ studyId: study.id, siteId: site.id, subject, sex: 'female', birthYear: 1960, enrolledOn: '2026-01-24' });
    await giveConsent(db.knex, code, subject, '2026-01-01');
    const observation = (id: string, loinc: string, value: number, unit: string) => ({
      fullUrl: `urn:uuid:${id}`,
      resource: {
        resourceType: 'Observation', id, status: 'final', subject: { reference: 'urn:uuid:p1' }, effectiveDateTime: '2026-01-10T09:00:00Z',
        code: { coding: [{ system: 'http://loinc.org', code: loinc }] }, valueQuantity: { value, unit, system: 'http://unitsofmeasure.org', code: unit },
      },
    });
    const bundle = {
      resourceType: 'Bundle', type: 'collection', entry: [
        { fullUrl: 'urn:uuid:p1', resource: { resourceType: 'Patient', id: 'p1', gender: 'female', birthDate: '1960-05-05' } },
        observation('o1', '718-7', 13.5, 'g/dL'),
        observation('o2', '1742-6', 30, 'U/L'),
      ],
    };
    const proposed = await inTransaction(db.knex, (s) => importFhirRecord(s, key, study, { subject, mode: 'review', entries: fhirJsonEntries(JSON.stringify(bundle)) }));
    const hgb = proposed.items.findIndex((i) => i.form === 'lab_hem' && i.field === 'hgb');
    const alt = proposed.items.findIndex((i) => i.form === 'lab_chem' && i.field === 'alt');
    expect([proposed.items[hgb]?.state, proposed.items[alt]?.state]).to.deep.equal(['new', 'new']);
    return { number: proposed.number, hgb, alt };
  }

  const codeOf = (attempt: Promise<unknown>) => attempt.then(() => 'decided', (e: unknown) => (e instanceof DomainError ? e.code : String(e)));
  const savedHaemoglobin = async (subject: string) => (await db.knex('records as r').join('forms as f', 'f.id', 'r.form_id').join('patients as p', 'p.id', 'r.patient_id')
    .where({ 'f.code': 'lab_hem', 'p.subject': subject }).first<{ values: Record<string, string> } | undefined>('r.values'))?.values.hgb ?? null;

  it('is not ended by a person who is not shown those values: confirming or rejecting is refused and the import still waits', async () => {
    const { number, alt } = await proposedImport('01-B1');
    expect(await codeOf(inTransaction(db.knex, (s) => confirmImport(s, blinded, { study: code, subject: '01-B1', number, choices: { [alt]: 'fill' } }))))
      .to.equal('import_needs_unblinded_team');
    expect(await codeOf(inTransaction(db.knex, (s) => rejectImport(s, blinded, { study: code, subject: '01-B1', number }))))
      .to.equal('import_needs_unblinded_team');
    const stored = await db.knex('fhir_imports as i').join('patients as p', 'p.id', 'i.patient_id').where({ 'p.subject': '01-B1', 'i.number': number }).first<{ status: string }>('i.status');
    expect(stored?.status).to.equal('proposed');
  });

  it('is decided by a member of the unblinded team, who can take those values', async () => {
    const { number, hgb, alt } = await proposedImport('01-B2');
    expect(await codeOf(inTransaction(db.knex, (s) => confirmImport(s, unblinded, { study: code, subject: '01-B2', number, choices: { [hgb]: 'fill', [alt]: 'fill' } }))))
      .to.equal('decided');
    expect(await savedHaemoglobin('01-B2')).to.equal('13.5');
  });
});
