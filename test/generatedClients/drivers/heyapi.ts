// The walk-through through the client @hey-api/openapi-ts generated (test/api/generatedClients.test.ts).
import { client } from './client/client.gen';
import { createPatient, getStudyDesign, importFhirRecord, listPatients } from './client/sdk.gen';
import type { Problem } from './client/types.gen';
import { env, observation, readAllPages, report } from './scenario';

client.setConfig({ baseUrl: env.url, auth: () => env.key, throwOnError: false });
const path = { study_code: env.study };
const design = await getStudyDesign({ path });
if (!design.data) throw new Error(`getStudyDesign: ${design.response.status}`);
const created = await createPatient({ path, body: { site: design.data.sites[0].number, sex: 'female', birth_year: 1970, enrolled_on: '2026-03-09' } });
if (!created.data) throw new Error(`createPatient: ${created.response.status}`);
const { pages, subjects } = await readAllPages(async (after) => {
  const page = await listPatients({ path, query: { limit: 1, after } });
  if (!page.data) throw new Error(`listPatients: ${page.response.status}`);
  return page.data;
});
const refused = await createPatient({ path, body: { site: 'no-such-site', sex: 'male', birth_year: 1980, enrolled_on: '2026-03-09' } });
const problem: Problem | undefined = refused.error;
const imported = await importFhirRecord({ path, query: { subject: env.fhirSubject }, body: observation });
if (!imported.data) throw new Error(`importFhirRecord: ${imported.response.status} ${JSON.stringify(imported.error)}`);
report({
  study: design.data.study.code, enrolled: created.data.subject, pages, subjects,
  refusal: { status: refused.response.status, code: problem?.code ?? '' }, fhir: imported.data.status,
});
