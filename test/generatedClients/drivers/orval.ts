// The walk-through through the client orval generated (test/api/generatedClients.test.ts); its base URL is set in its config.
import { createPatient, getStudyDesign, importFhirRecord, listPatients } from './client/api';
import { env, observation, readAllPages, report } from './scenario';

const options = { headers: { Authorization: `Bearer ${env.key}` } };
const design = await getStudyDesign(env.study, undefined, options);
if (design.status !== 200) throw new Error(`getStudyDesign: ${design.status}`);
const created = await createPatient(env.study, { site: design.data.sites[0].number, sex: 'female', birth_year: 1970, enrolled_on: '2026-03-09' }, undefined, options);
if (created.status !== 201) throw new Error(`createPatient: ${created.status}`);
const { pages, subjects } = await readAllPages(async (after) => {
  const page = await listPatients(env.study, { limit: 1, after }, options);
  if (page.status !== 200) throw new Error(`listPatients: ${page.status}`);
  return page.data;
});
const refused = await createPatient(env.study, { site: 'no-such-site', sex: 'male', birth_year: 1980, enrolled_on: '2026-03-09' }, undefined, options);
if (refused.status !== 422) throw new Error(`createPatient for an unknown site: ${refused.status}`);
const imported = await importFhirRecord(env.study, { subject: env.fhirSubject }, observation, options);
if (imported.status !== 201) throw new Error(`importFhirRecord: ${imported.status} ${JSON.stringify(imported.data)}`);
report({
  study: design.data.study.code, enrolled: created.data.subject, pages, subjects,
  refusal: { status: refused.status, code: refused.data.code }, fhir: imported.data.status,
});
