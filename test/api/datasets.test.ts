import { readFileSync } from 'node:fs';
import Ajv2019Module from 'ajv/dist/2019.js';
import { expect } from 'chai';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { ColumnDef, FormDef } from '../../src/domain/studyDesign/types.js';
import { createExportWorld, recordsRead, type ExportWorld } from '../helpers/exportWorld.js';
import type { AnswerOf, Problem } from '../helpers/answerTypes.js';
import { createStudyWorld, demoDesign, giveConsent, makeKey } from '../helpers/factories.js';
import { at, present } from '../helpers/only.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { resetDatabase } from '../helpers/testDatabase.js';

/**
 * The Dataset-JSON v1.1 export (listDatasets, getDataset) read by a validator built only from CDISC's
 * official schemas (test/fixtures/cdisc-dataset-json-1.1, Ajv's draft 2019-09 build), its rows compared
 * with what the records read returns for the same key, and the key's rules (sites, blinding, withdrawn
 * consent) and the read log checked.
 */

const Ajv2019 = Ajv2019Module.default;
const FIXTURES = 'test/fixtures/cdisc-dataset-json-1.1';
type Dataset = AnswerOf<'getDataset', 200>;
type Column = Dataset['columns'][number];
type Datasets = AnswerOf<'listDatasets', 200>;

/** Validators of the official schema: a whole file (or the NDJSON form's first line, a file without rows) and one row. */
function officialValidators() {
  const ajv = new Ajv2019({ allErrors: true, strict: false });
  const schema = JSON.parse(readFileSync(`${FIXTURES}/dataset.schema.json`, 'utf8')) as { $id: string };
  const dataset = ajv.compile(schema);
  const row = ajv.getSchema(`${schema.$id}#/$defs/Row`);
  if (!row) throw new Error('the official schema has no Row definition');
  return { dataset, row };
}

/** What the records read's saved value string becomes in a Dataset-JSON row (the spec's mapping, written again here). */
function expectedCell(field: ColumnDef, saved: string | undefined): unknown {
  if (saved === undefined || saved === '') return null;
  if (field.type === 'integer') return Number(saved);
  if (field.type === 'yesno') return saved === 'yes';
  return saved;
}

describe('Dataset-JSON exports (listDatasets, getDataset)', () => {
  let app: TestApp;
  let world: ExportWorld;
  const code = 'DSJ';
  const base = `/api/v1/studies/${code}`;
  const design = parseStudyDesign(readFileSync('studies/demo.yaml', 'utf8'));
  const validators = officialValidators();

  before(async () => {
    app = await startTestApp();
    world = await createExportWorld(app, code);
  });
  after(() => app.close());

  it('lists a dataset per form and per table field with row counts as the key may see them', async () => {
    const res = await app.call<Datasets>('GET', `${base}/datasets`, { key: world.key });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const byName = new Map(res.body.datasets.map((d) => [d.name, d]));
    expect([...byName.keys()]).to.include.members(['DM', 'VS', 'LAB_HEM', 'LAB_CHEM', 'MH', 'MH_CONDITIONS', 'CM_MEDICATIONS', 'AE_EVENTS', 'IP_ALLOC']);
    expect(byName.get('VS')).to.deep.equal({ name: 'VS', label: 'Vital signs', itemGroupOID: 'IG.VS', form: 'vs', table: null, records: 4 });
    expect(byName.get('MH_CONDITIONS')).to.include({ itemGroupOID: 'IG.MH.CONDITIONS', form: 'mh', table: 'conditions', records: 2 });
    expect(byName.get('AE_EVENTS')?.records).to.equal(1);
  });

  for (const who of ['key', 'blindedKey', 'site02Key'] as const) it(`serves every dataset valid against the official schema, with the rows the records read gives (${who})`, async () => {
    const key = world[who];
    const records = await recordsRead(app, code, key);
    expect(records.length).to.be.above(0);
    const list = (await app.call<Datasets>('GET', `${base}/datasets`, { key })).body.datasets;
    for (const summary of list) {
      const res = await app.call<Dataset>('GET', `${base}/datasets/${summary.name}`, { key });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      const file = res.body;
      expect(validators.dataset(file), `${summary.name}: ${JSON.stringify(validators.dataset.errors)}`).to.equal(true);
      expect(file.records).to.equal(summary.records).and.equal(file.rows?.length);
      expect(file.itemGroupOID).to.equal(summary.itemGroupOID);

      const form = design.forms.find((f) => f.code === summary.form) as FormDef;
      const names = file.columns.map((c) => c.name);
      const cell = (row: unknown[], name: string) => row[names.indexOf(name)];
      const expected = records.filter((r) => r.form === summary.form).flatMap((r) => {
        const where = [code, r.site, r.subject, r.visit, design.visits.find((v) => v.code === r.visit)?.name, design.visits.findIndex((v) => v.code === r.visit) + 1, r.instance, r.status];
        if (summary.table) {
          const table = form.fields.find((f) => f.code === summary.table) as { columns: ColumnDef[] };
          return (r.tables[summary.table] ?? []).map((row, i) => [...where, i + 1, ...table.columns.map((c) => expectedCell(c, row[c.code]))]);
        }
        return [[...where, ...form.fields.flatMap((f) => [...(f.type === 'table' ? [] : [expectedCell(f, r.values[f.code])]), r.not_done[f.code] ?? null])]];
      });
      expect(file.rows, summary.name).to.have.deep.members(expected);
      // Rows come in key order: subject, visit order, instance.
      const keys = present(file.rows, `${summary.name}: rows`).map((row) => [cell(row, 'SUBJID'), cell(row, 'VISITNUM'), cell(row, 'INSTANCE')] as [string, number, number]);
      const sorted = [...keys].sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1] || x[2] - y[2]);
      expect(keys).to.deep.equal(sorted);
    }
  });

  it('describes each column with the data type, length, display format, unit and label the standard asks for', async () => {
    const file = (await app.call<Dataset>('GET', `${base}/datasets/VS`, { key: world.key })).body;
    const column = (name: string) => file.columns.find((c) => c.name === name);
    expect(column('STUDYID')).to.include({ dataType: 'string', keySequence: 1 });
    expect(column('SUBJID')).to.include({ dataType: 'string', keySequence: 2 });
    expect(column('VISITNUM')).to.include({ dataType: 'integer', keySequence: 3 });
    expect(column('INSTANCE')).to.include({ dataType: 'integer', keySequence: 4 });
    expect(column('SBP')).to.deep.include({ itemOID: 'IT.VS.SBP', dataType: 'integer', label: 'Systolic blood pressure (mm[Hg])' });
    expect(column('TEMP')).to.include({ dataType: 'decimal', targetDataType: 'decimal', displayFormat: '4.1' });
    expect(column('VSDATE')).to.include({ dataType: 'date', displayFormat: 'E8601DA.' });
    expect(column('RRND')).to.include({ dataType: 'string', length: 3 });
    const row = present(file.rows?.find((r) => r[file.columns.findIndex((c) => c.name === 'SBP')] === 232), 'the row with SBP 232');
    const cellOf = (name: string) => row[file.columns.findIndex((c) => c.name === name)];
    expect([cellOf('TEMP'), cellOf('VSDATE'), cellOf('RR'), cellOf('RRND'), cellOf('WEIGHTND')]).to.deep.equal(['36.6', '2025-12-28', null, 'ND', 'UNK']);
    expect(file.metaDataRef).to.match(new RegExp(`/api/v1/studies/${code}/odm\\?content=metadata$`));
  });

  it('serves the NDJSON form when Accept asks for it, valid line by line', async () => {
    const json = (await app.call<Dataset>('GET', `${base}/datasets/MH_CONDITIONS`, { key: world.key })).body;
    // The NDJSON form is text: the test app hands it over unparsed.
    const res = await app.call<string>('GET', `${base}/datasets/MH_CONDITIONS`, { key: world.key, headers: { accept: 'application/x-ndjson' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    const lines = res.body.split('\n');
    expect(lines.pop()).to.equal('');
    const metadata = JSON.parse(at(lines, 0)) as Omit<Dataset, 'rows'>;
    expect(validators.dataset(metadata), JSON.stringify(validators.dataset.errors)).to.equal(true);
    expect(metadata).to.not.have.property('rows');
    const rows = lines.slice(1).map((l) => JSON.parse(l) as unknown[]);
    for (const row of rows) {
      expect(validators.row(row), JSON.stringify(validators.row.errors)).to.equal(true);
      expect(row).to.be.an('array').with.length(metadata.columns.length);
    }
    expect(rows).to.deep.equal(json.rows);
    expect(validators.dataset({ ...metadata, rows }), JSON.stringify(validators.dataset.errors)).to.equal(true);
    expect(rows.map((r) => r[metadata.columns.findIndex((c: Column) => c.name === 'TERM')])).to.have.members(['Hypertension', 'Appendicitis "acute" & <rare>']);
  });

  it('gives the metadata alone with metadataonly=true', async () => {
    const file = (await app.call<Dataset>('GET', `${base}/datasets/VS?metadataonly=true`, { key: world.key })).body;
    expect(validators.dataset(file)).to.equal(true);
    expect(file).to.not.have.property('rows');
    expect(file.records).to.equal(4);
  });

  it('shows a blinded key no unblinded-team form and a one-site key no other site, and never a withdrawn patient', async () => {
    const blinded = await app.call<Datasets>('GET', `${base}/datasets`, { key: world.blindedKey });
    expect(blinded.body.datasets.map((d) => d.name)).to.not.include('IP_ALLOC');
    const hidden = await app.call<Problem>('GET', `${base}/datasets/IP_ALLOC`, { key: world.blindedKey });
    expect(hidden.status).to.equal(404);
    expect(hidden.body.code).to.equal('dataset_not_found');

    const site02 = (await app.call<Dataset>('GET', `${base}/datasets/VS`, { key: world.site02Key })).body;
    const siteColumn = site02.columns.findIndex((c) => c.name === 'SITEID');
    expect(site02.rows?.length).to.equal(1);
    expect(site02.rows?.map((r) => r[siteColumn])).to.deep.equal(['02']);

    const all = (await app.call<Dataset>('GET', `${base}/datasets/VS`, { key: world.key })).body;
    const subjectColumn = all.columns.findIndex((c) => c.name === 'SUBJID');
    expect(all.rows?.map((r) => r[subjectColumn])).to.not.include(world.withdrawn);
  });

  it('enters each export in the read log with its number of rows', async () => {
    await app.call('GET', `${base}/datasets/AE_EVENTS`, { key: world.site02Key });
    await app.call('GET', `${base}/datasets/MH_CONDITIONS`, { key: world.key, headers: { accept: 'application/x-ndjson' } });
    const log = await app.db.knex<{ id: number; operation: string; filters: object; rows: number }>('read_log').where({ operation: 'dataset' }).orderBy('id', 'desc').limit(2);
    expect(log.map((r) => [r.filters, r.rows])).to.deep.equal([
      [{ dataset: 'MH_CONDITIONS', format: 'ndjson' }, 2],
      [{ dataset: 'AE_EVENTS', format: 'json' }, 0],
    ]);
  });

  it('refuses an unknown dataset name, a malformed one, and a key without the read right', async () => {
    const unknown = await app.call<Problem>('GET', `${base}/datasets/NOPE`, { key: world.key });
    expect([unknown.status, unknown.body.code]).to.deep.equal([404, 'dataset_not_found']);
    const malformed = await app.call('GET', `${base}/datasets/vs`, { key: world.key });
    expect(malformed.status).to.equal(400);
    const writer = await makeKey(app.db.knex, { study: code, by: world.manager, canRead: false });
    for (const path of ['/datasets', '/datasets/VS']) expect((await app.call('GET', `${base}${path}`, { key: writer.key })).status).to.equal(403);
  });
});

describe('Dataset-JSON exports: names two datasets would share', () => {
  let app: TestApp;
  let key: string;
  const code = 'DSN';
  const base = `/api/v1/studies/${code}`;
  // A form `mh_conditions` beside the form `mh` with its table `conditions`: both datasets would be called MH_CONDITIONS.
  const design = demoDesign(code, (d) => {
    d.forms.push({ code: 'mh_conditions', name: 'Conditions noted', team: 'all', fields: [{ code: 'note', label: 'Note', type: 'text', required: true }] });
    d.visits.find((v) => v.code === 'screening')?.forms.push('mh_conditions');
  });

  before(async () => {
    app = await startTestApp();
    await resetDatabase(app.db.knex);
    const world = await createStudyWorld(app.db.knex, design);
    key = world.key;
    const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `${base}/patients`, { key, body: { site: '01', sex: 'female', birth_year: 1961, enrolled_on: '2026-01-05' } });
    await giveConsent(app.db.knex, code, enrolled.body.subject);
    const sent = await app.call<AnswerOf<'submitFormRecords', 200>>('POST', `${base}/records`, { key, body: { records: [
      { subject: enrolled.body.subject, visit: 'screening', form: 'mh', tables: { conditions: [{ term: 'Hypertension' }] } },
      { subject: enrolled.body.subject, visit: 'screening', form: 'mh_conditions', values: { note: 'Seen by the GP' } },
    ] } });
    expect(sent.body.counts.ok, JSON.stringify(sent.body)).to.equal(2);
  });
  after(() => app.close());

  it('gives each dataset a name of its own, and serves each by its name, the one served before keeping it', async () => {
    const list = (await app.call<Datasets>('GET', `${base}/datasets`, { key })).body.datasets;
    const names = list.map((d) => d.name);
    expect(new Set(names).size, names.join(', ')).to.equal(names.length);
    expect(list.filter((d) => d.name.startsWith('MH_CONDITIONS')).map((d) => [d.name, d.itemGroupOID])).to.deep.equal([
      ['MH_CONDITIONS', 'IG.MH.CONDITIONS'], ['MH_CONDITIONS_2', 'IG.MH_CONDITIONS'],
    ]);
    for (const summary of list) {
      const file = (await app.call<Dataset>('GET', `${base}/datasets/${summary.name}`, { key })).body;
      expect([file.name, file.itemGroupOID, file.records], summary.name).to.deep.equal([summary.name, summary.itemGroupOID, summary.records]);
    }
    const note = (await app.call<Dataset>('GET', `${base}/datasets/MH_CONDITIONS_2`, { key })).body;
    expect(note.rows?.map((r) => r[note.columns.findIndex((c) => c.name === 'NOTE')])).to.deep.equal(['Seen by the GP']);
  });
});
