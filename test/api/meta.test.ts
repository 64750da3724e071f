import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { sdx, sdxExitCode } from '../helpers/sdxCli.js';
import type { Problem } from '../helpers/answerTypes.js';
import { at, only } from '../helpers/only.js';
import { resetDatabase } from '../helpers/testDatabase.js';

/** The members of the served OpenAPI document the tests below read. */
interface OpenApiDocument {
  openapi: string;
  servers: { url: string }[];
  info: { contact?: Record<string, unknown> };
  paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
  components: { parameters: Record<string, unknown>; schemas: Record<string, unknown> };
}
/** What the command line prints when it refuses. */
interface CliRefusal { error: { code: string } }

describe('getOpenApi and the contract', () => {
  const { app, world } = useStudyWorld();

  it('serves spec/openapi.yaml as JSON, unchanged, with all twenty operations', async () => {
    const res = await app.call<OpenApiDocument>('GET', '/api/v1/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal(yaml.load(readFileSync('spec/openapi.yaml', 'utf8')));
    expect(res.body.openapi).to.equal('3.1.0');
    const operations = Object.values(res.body.paths)
      .flatMap((path) => Object.values(path).map((op) => op.operationId).filter(Boolean));
    expect(operations).to.have.members(['getStudyDesign', 'createPatient', 'submitFormRecords', 'listPatients', 'listFormRecords', 'listQueries', 'openQuery', 'answerQuery', 'closeQuery', 'listAuditTrail', 'importFhirRecord', 'importFhirNdjson', 'listFhirImports', 'getFhirImport', 'listDatasets', 'getDataset', 'exportOdm', 'getOpenApi', 'getApiDocs', 'getApiDocsAsset']);
  });

  it('serves a document generators read cleanly: an absolute server, a contact, parameter names apart from schema names, the page under its own tag', async () => {
    const doc = (await app.call<OpenApiDocument>('GET', '/api/v1/openapi.json')).body;
    // swagger-typescript-api joined `/` with `/api/v1/...` into `//api/v1/...`; openapi-typescript-codegen made a model of each component parameter.
    expect(doc.servers).to.have.length(1);
    expect(only(doc.servers).url).to.match(/^https?:\/\/[^/{}]+$/);
    expect(doc.info.contact).to.have.property('name').that.is.a('string');
    expect(Object.keys(doc.components.parameters).filter((name) => name in doc.components.schemas)).to.deep.equal([]);
    const tagged = Object.values(doc.paths)
      .flatMap((path) => Object.values(path)).filter((op) => op.operationId && op.tags?.includes('docs')).map((op) => op.operationId);
    expect(tagged).to.have.members(['getApiDocs', 'getApiDocsAsset']);
  });

  it('answers an unknown address with a 404 problem and a wrong method with 405', async () => {
    const missing = await app.call<Problem>('GET', '/api/v1/nothing-here', { key: world.key });
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('not_found');
    const wrongMethod = await app.call<Problem>('DELETE', `/api/v1/studies/${world.code}`, { key: world.key });
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.body.code).to.equal('method_not_allowed');
  });

  it('words problems in Russian for lang=ru and for Accept-Language: ru, and never shows a stack', async () => {
    const byQuery = await app.call<Problem>('GET', `/api/v1/studies/${world.code}?lang=ru`);
    expect(byQuery.status).to.equal(401);
    expect(byQuery.body.title).to.equal('Нет API-ключа');
    const byHeader = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { headers: { 'accept-language': 'ru-RU,ru;q=0.9,en;q=0.5' } });
    expect(byHeader.body.title).to.equal('Нет API-ключа');
    const english = await app.call<Problem>('GET', `/api/v1/studies/${world.code}`, { headers: { 'accept-language': 'de, en;q=0.5' } });
    expect(english.body.title).to.equal('API key missing');
    expect(JSON.stringify(english.body)).not.to.match(/\bat .*\.(ts|js):\d+/);
  });

  it('refuses a body over 5 MB with 413 from its declared length, before reading it', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024 + 10, ' ');
    const res = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, raw: big });
    expect(res.status).to.equal(413);
    expect(res.body.code).to.equal('payload_too_large');
  });

  it('refuses a content type the call does not declare with 415, and broken JSON with 422', async () => {
    const wrongType = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, raw: 'records=1', contentType: 'application/x-www-form-urlencoded' });
    expect(wrongType.status).to.equal(415);
    expect(wrongType.body.code).to.equal('unsupported_media_type');
    const broken = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, raw: '{"records": [' });
    expect(broken.status).to.equal(422);
    expect(broken.body.code).to.equal('invalid_body');
  });

  it('reports body schema errors as 422 with a pointer per member, parameter errors as 400', async () => {
    const body = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site: '01', sex: 'robot', birth_year: 1970 } });
    expect(body.status).to.equal(422);
    expect(body.body.code).to.equal('invalid_body');
    expect(body.body.errors?.map((e) => e.pointer)).to.include.members(['/sex', '/enrolled_on']);
    const param = await app.call<Problem>('GET', `/api/v1/studies/${world.code}/records?limit=5000`, { key: world.key });
    expect(param.status).to.equal(400);
    expect(at(param.body.errors ?? [], 0).pointer).to.equal('/query/limit');
  });
});

describe('the sdx command line', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
    await resetDatabase(app.db.knex);
  });
  after(() => app.close());

  it('creates a study, a manager and a key that authenticates, printing one JSON object each', async () => {
    expect(await sdx('study', 'load', 'studies/demo.yaml')).to.deep.equal({ study: 'DEMO', created: true });
    expect(await sdx('study', 'load', 'studies/demo.yaml')).to.deep.equal({ study: 'DEMO', created: false });
    expect((await sdx<{ email: string }>('user', 'add', '--email', 'm@sdx.test', '--name', 'M')).email).to.equal('m@sdx.test');
    expect((await sdx<{ role: string }>('role', 'grant', 'DEMO', '--email', 'm@sdx.test', '--role', 'manager', '--export')).role).to.equal('manager');
    const made = await sdx<{ key: string; sites: string[] }>('key', 'create', 'DEMO', '--by', 'm@sdx.test', '--name', 'LIMS', '--rights', 'read,write', '--enrol', '--term', '30');
    expect(made.key).to.match(/^sdx_[0-9A-Za-z]{49}$/);
    expect(made.sites).to.deep.equal(['01', '02']);
    const design = await app.call('GET', '/api/v1/studies/DEMO', { key: made.key });
    expect(design.status).to.equal(200);
    const listed = await sdx<{ keys: Record<string, unknown>[] }>('key', 'list', 'DEMO');
    expect(at(listed.keys, 0)).to.include({ name: 'LIMS', state: 'active', requests: 1 });
  });

  it('prints refusals and usage errors as one JSON object too, and exits non-zero', async () => {
    expect((await sdx<CliRefusal>('key', 'create', 'DEMO', '--by', 'nobody@sdx.test', '--name', 'X', '--rights', 'read', '--term', '30')).error.code).to.equal('user_not_found');
    expect(await sdxExitCode('key', 'list', 'NOPE'), 'exit code of a refused command').to.equal(1);
    expect((await sdx<CliRefusal>('key', 'create', 'DEMO', '--by', 'm@sdx.test', '--name', 'X', '--rights', 'read', '--term', '31')).error.code).to.equal('usage');
    expect((await sdx<CliRefusal>('study', 'load', 'package.json')).error.code).to.equal('design_invalid');
  });
});
