// The walk-through through the client swagger-typescript-api generated (test/api/generatedClients.test.ts).
import { Api, Sex, type HttpResponse, type Problem } from './client/api';
import { env, observation, readAllPages, report, type Outcome } from './scenario';

const sdx = new Api({ baseUrl: env.url, baseApiParams: { headers: { Authorization: `Bearer ${env.key}` } } }).api;
const design = (await sdx.getStudyDesign(env.study)).data;
const created = (await sdx.createPatient(env.study, { site: design.sites[0].number, sex: Sex.Female, birth_year: 1970, enrolled_on: '2026-03-09' })).data;
const { pages, subjects } = await readAllPages(async (after) => (await sdx.listPatients(env.study, { limit: 1, after })).data);
let refusal: Outcome['refusal'] = { status: 0, code: '' };
try {
  await sdx.createPatient(env.study, { site: 'no-such-site', sex: Sex.Male, birth_year: 1980, enrolled_on: '2026-03-09' });
} catch (error) {
  // The client rejects with the response, its problem body in `error`.
  const response = error as HttpResponse<unknown, Problem>;
  refusal = { status: response.status, code: response.error.code };
}
const imported = (await sdx.importFhirRecord(env.study, { subject: env.fhirSubject }, observation)).data;
report({ study: design.study.code, enrolled: created.subject, pages, subjects, refusal, fhir: imported.status });
