/**
 * The typical order of use of the sdx API with the typed client (clients/typescript): (1) read the study
 * design, (2) enrol a patient, (3) send visit forms, (4) read the data back page by page and
 * incrementally, (5) send a FHIR record.
 *
 *   KEY=sdx_… BASE_URL=http://localhost:8080 STUDY=DEMO npx tsx examples/typescript/walkthrough.ts
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createSdxClient,
  incrementalLoader,
  memoryWatermarkStore,
  readPages,
  readRows,
  rowKey,
  sendFhirRecord,
  unwrap,
  type Row,
  type Schemas,
} from '../../clients/typescript/src/index.js';

const key = process.env.KEY;
if (!key) throw new Error('set KEY to the API key (make run prints one)');
const study = process.env.STUDY ?? 'DEMO';
const site = process.env.SITE ?? '01';
const consentWait = Number(process.env.CONSENT_WAIT ?? 600); // seconds to wait for the site team to record consent
const client = createSdxClient({ baseUrl: process.env.BASE_URL ?? 'http://localhost:8080', key });
const path = { study_code: study };

console.log('1. Study design');
const design = unwrap(await client.GET('/api/v1/studies/{study_code}', { params: { path } }));
console.log(`   ${design.study.name}: sites ${design.sites.map((s) => s.number).join(', ')}, ${design.forms.length} forms`);

console.log(`2. Enrol a patient at site ${site}`);
const { subject } = unwrap(await client.POST('/api/v1/studies/{study_code}/patients', {
  params: { path },
  body: { site, sex: 'female', birth_year: 1968, enrolled_on: '2026-03-02' },
}));
console.log(`   enrolled ${subject}`);

const screening: Schemas['RecordInput'] = { subject, visit: 'screening', form: 'vs', values: { vsdate: '2026-02-16', sbp: '138', dbp: '86', hr: '72', weight: '81.5' } };
if (design.study.consent_required) {
  // Consent is recorded by the site team in the portal, not through the API. Until it is, a record of the
  // patient is refused with consent_missing; validate_only asks without saving anything.
  console.log(`   waiting for consent of patient ${subject} (the site team records it; for the demo study:`);
  console.log(`   node bin/sdx.js patient consent ${study} ${subject} --given 2026-02-16)`);
  const deadline = Date.now() + consentWait * 1000;
  const consentMissing = async () => unwrap(await client.POST('/api/v1/studies/{study_code}/records', {
    params: { path, query: { validate_only: true } },
    body: { records: [screening] },
  })).results[0]?.code === 'consent_missing';
  while (await consentMissing()) {
    if (Date.now() > deadline) throw new Error(`no consent after ${consentWait} s`);
    await sleep(2000);
  }
  console.log('   consent recorded');
}

console.log('3. Send visit forms');
const sent = unwrap(await client.POST('/api/v1/studies/{study_code}/records', {
  params: { path },
  body: { records: [screening, { subject, visit: 'baseline', form: 'vs', values: { vsdate: '2026-03-02', sbp: '232', dbp: '95', hr: '78' } }] },
}));
for (const r of sent.results) console.log(`   record ${r.index}: ${r.status} ${r.code} - ${r.message}`);

console.log('4. Read the data back');
let pages = 0;
for await (const page of readPages(client, study, 'records', { subject, limit: 1 })) pages += page.records.length;
console.log(`   read ${pages} records, one a page (limit=1)`);
// A chain of incremental loads into a copy of our own: the loader keeps the watermark between runs,
// upserts rows by id (they may come again) and deletes the patients listed in `removed`.
const copy = new Map<string, Row<'records'>>();
const loader = incrementalLoader(client, study, 'records', {
  store: memoryWatermarkStore(),
  filters: { subject },
  sink: {
    upsert: (rows) => rows.forEach((row) => copy.set(rowKey('records', row), row)),
    remove: (removals) => {
      for (const [id, row] of copy) if (removals.some((r) => r.subject === row.subject)) copy.delete(id);
    },
  },
});
const first = await loader.run();
unwrap(await client.POST('/api/v1/studies/{study_code}/records', {
  params: { path },
  body: { records: [{ subject, visit: 'baseline', form: 'vs', update: true, values: { sbp: '182' } }] },
}));
const second = await loader.run();
const baseline = [...copy.values()].find((r) => r.visit === 'baseline');
console.log(`   loads: ${first.rows} rows, then ${second.rows} since ${second.since}; ${copy.size} records, baseline sbp ${baseline?.values.sbp}`);
const queries = [];
for await (const query of readRows(client, study, 'queries', { subject })) queries.push(`${query.field} ${query.status}`);
console.log(`   queries: ${queries.join(', ')}`);

console.log('5. Send a FHIR record for review');
const record = JSON.parse(readFileSync(new URL('../data/fhir-record.json', import.meta.url), 'utf8')) as Schemas['FhirResource'];
const fhir = await sendFhirRecord(client, study, subject, record, 'review');
console.log(`   import ${fhir.import} is ${fhir.status} with ${fhir.counts.values} values: ${fhir.review_url}`);
console.log(`done: patient ${subject}`);
