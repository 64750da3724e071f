// The walk-through through the client openapi-typescript-codegen generated (test/api/generatedClients.test.ts).
import { ApiError, FhirService, OpenAPI, PatientsService, Sex, StudiesService, type Problem } from './client/index';
import { env, observation, readAllPages, report, type Outcome } from './scenario';

OpenAPI.BASE = env.url;
OpenAPI.TOKEN = env.key;
const studyCode = env.study;
const design = await StudiesService.getStudyDesign({ studyCode });
const created = await PatientsService.createPatient({ studyCode, requestBody: { site: design.sites[0].number, sex: Sex.FEMALE, birth_year: 1970, enrolled_on: '2026-03-09' } });
const { pages, subjects } = await readAllPages((after) => PatientsService.listPatients({ studyCode, limit: 1, after }));
let refusal: Outcome['refusal'] = { status: 0, code: '' };
try {
  await PatientsService.createPatient({ studyCode, requestBody: { site: 'no-such-site', sex: Sex.MALE, birth_year: 1980, enrolled_on: '2026-03-09' } });
} catch (error) {
  if (!(error instanceof ApiError)) throw error;
  const problem: Problem = error.body;
  refusal = { status: error.status, code: problem.code };
}
const imported = await FhirService.importFhirRecord({ studyCode, subject: env.fhirSubject, requestBody: observation });
report({ study: design.study.code, enrolled: created.subject, pages, subjects, refusal, fhir: imported.status });
