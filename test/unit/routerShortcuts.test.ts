import { parse as parseQueryString } from 'node:querystring';
import { expect } from 'chai';
import addFormatsModule from 'ajv-formats';
import { OpenAPIBackend, type Request } from 'openapi-backend';
import { checkOpenapiBackendVersion, OPENAPI_BACKEND_VERSION, parseRequestsQuickly, rememberRoutes } from '../../src/handlers/routerShortcuts.js';
import { loadSpec, routedDocument } from '../../src/handlers/spec.js';

/** A router over the contract, as createApi builds it (coercion on), with or without the quick parse. */
async function routerOf(quick: boolean): Promise<OpenAPIBackend['router']> {
  const api = new OpenAPIBackend({
    definition: routedDocument(loadSpec()), strict: true, coerceTypes: true,
    ajvOpts: { allErrors: true, useDefaults: true }, customizeAjv: (ajv) => addFormatsModule.default(ajv),
  });
  await api.init();
  if (quick) parseRequestsQuickly(api.router);
  return api.router;
}

/** A request as app.ts hands it over: Koa's path, lower-case headers and query (parsed by node:querystring, so without a prototype). */
function koaRequest(method: string, address: string, extra: Partial<Request> = {}): Request {
  const [path, search = ''] = address.split('?');
  return { method, path, headers: { host: '127.0.0.1', authorization: 'Bearer sdx_x', accept: '*/*' }, query: parseQueryString(search) as Request['query'], ...extra };
}

const REQUESTS: [string, Request][] = [
  ['the design call', koaRequest('GET', '/api/v1/studies/DEMO')],
  ['a read page with a repeated filter', koaRequest('GET', '/api/v1/studies/DEMO/records?limit=5&form=vs&form=lab&after=abc')],
  ['an encoded study code', koaRequest('GET', '/api/v1/studies/D%C3%89MO%20X/patients')],
  ['a records call with its parsed body', koaRequest('POST', '/api/v1/studies/DEMO/records', { body: { records: [{ subject: 'S-1', values: { a: '1' } }] }, headers: { 'content-type': 'application/json' } })],
  ['headers in capitals', koaRequest('GET', '/api/v1/studies/DEMO', { headers: { 'X-Custom': 'a', Authorization: 'Bearer sdx_y' } })],
  ['a path with a query string and no leading slash', koaRequest('GET', ' api/v1/studies/DEMO/queries?status=open ')],
  ['a path with a trailing slash', koaRequest('GET', '/api/v1/studies/DEMO/')],
  ['coerced values, as validation hands them back', { method: 'get', path: '/api/v1/studies/DEMO/records', headers: {}, query: { limit: 5, include_removed: true, form: ['vs'] } as unknown as Request['query'] }],
  ['a cookie (openapi-backend parses it)', koaRequest('GET', '/api/v1/studies/DEMO', { headers: { cookie: 'sdx_session=abc; other=1' } })],
  ['an NDJSON body as text (openapi-backend tries it as JSON)', koaRequest('POST', '/api/v1/studies/DEMO/fhir', { body: '{"resourceType":"Patient"}\n{"resourceType":"Observation"}' })],
  ['a query member named __proto__', koaRequest('GET', '/api/v1/studies/DEMO/records?__proto__=x&__proto__=y')],
  ['a path no operation has', koaRequest('GET', '/api/v1/nowhere/at/all')],
  ['no headers at all', { method: 'GET', path: '/api/v1/studies/DEMO', headers: undefined as unknown as Request['headers'], query: {} }],
];

describe('the router shortcuts (routerShortcuts.ts)', () => {
  it('start only on the openapi-backend version they were checked against', () => {
    expect(() => checkOpenapiBackendVersion()).to.not.throw();
    expect(() => checkOpenapiBackendVersion('5.22.0')).to.throw(/5\.22\.0 is installed.*checked against 5\.21\.2/);
    expect(OPENAPI_BACKEND_VERSION).to.equal('5.21.2');
  });

  it('route every kind of request, the first time and from memory, exactly as openapi-backend does', async () => {
    const library = await routerOf(false);
    const remembering = await routerOf(false);
    rememberRoutes(remembering);
    const requests: Request[] = [...REQUESTS.map(([, request]) => request), koaRequest('DELETE', '/api/v1/studies/DEMO'), koaRequest('POST', '/api/v1/studies/DEMO/patients')];
    for (const strict of [false, true]) {
      for (let round = 0; round < 2; round++) {
        for (const request of requests) {
          const answer = (router: typeof library) => {
            try {
              return router.matchOperation(request, strict)?.operationId ?? null;
            } catch (error) {
              return (error as Error).message.slice(0, 3);
            }
          };
          expect(answer(remembering), `${request.method} ${request.path} (strict ${strict}, round ${round})`).to.equal(answer(library));
        }
      }
    }
  });
});

describe('parseRequestsQuickly', () => {
  it('parses every kind of request exactly as openapi-backend does, before routing and for each operation', async () => {
    const [library, quick] = [await routerOf(false), await routerOf(true)];
    const operations = [undefined, ...library.getOperations()];
    for (const [what, request] of REQUESTS) {
      for (const operation of operations) {
        const expected = library.parseRequest(request, operation);
        const actual = quick.parseRequest(request, quick.getOperations().find((o) => o.operationId === operation?.operationId));
        const label = `${what}, ${operation?.operationId ?? 'before routing'}`;
        expect(actual, label).to.deep.equal(expected);
        expect(Object.getPrototypeOf(actual.query), `${label}: the query's prototype`).to.equal(Object.getPrototypeOf(expected.query));
        expect(Object.getPrototypeOf(actual.cookies), `${label}: the cookies' prototype`).to.equal(Object.getPrototypeOf(expected.cookies));
        expect(Object.keys(actual), `${label}: members in order`).to.deep.equal(Object.keys(expected));
      }
    }
  });

  it('parses the API\'s usual requests itself, path parameters decoded, and leaves only the others to openapi-backend', async () => {
    const router = await routerOf(false);
    const libraryParse = router.parseRequest.bind(router);
    let libraryParses = 0;
    router.parseRequest = (req, operation) => { libraryParses++; return libraryParse(req, operation); };
    parseRequestsQuickly(router);
    libraryParses = 0;
    const request = koaRequest('GET', '/api/v1/studies/D%C3%89MO/records?limit=5');
    const parsed = router.parseRequest(request, router.matchOperation(request, true));
    expect(parsed.params).to.deep.equal({ study_code: 'DÉMO' });
    expect(parsed.query).to.deep.equal({ limit: '5' });
    expect(parsed.query).to.not.equal(request.query);
    expect(libraryParses).to.equal(0);
    router.parseRequest(koaRequest('GET', '/api/v1/studies/DEMO', { headers: { cookie: 'a=1' } }));
    expect(libraryParses).to.equal(1);
  });
});
