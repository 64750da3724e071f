import { parse as parseQueryString } from 'node:querystring';
import { expect } from 'chai';
import { OpenAPIBackend, type Request } from 'openapi-backend';
import { DomainError } from '../../src/domain/errors.js';
import { rememberedRoutes } from '../../src/handlers/routes.js';
import { loadSpec, routedDocument } from '../../src/handlers/spec.js';

/** A request as app.ts hands it over: Koa's path, lower-case headers and query. */
function koaRequest(method: string, address: string): Request {
  const [path = '', search = ''] = address.split('?');
  return { method, path, headers: { host: '127.0.0.1' }, query: parseQueryString(search) as Request['query'] };
}

const REQUESTS: Request[] = [
  koaRequest('GET', '/api/v1/studies/DEMO'),
  koaRequest('GET', '/api/v1/studies/DEMO/records?limit=5&form=vs&form=lab'),
  koaRequest('GET', '/api/v1/studies/D%C3%89MO%20X/patients'),
  koaRequest('POST', '/api/v1/studies/DEMO/records'),
  koaRequest('get', ' api/v1/studies/DEMO/queries?status=open '),
  koaRequest('GET', '/api/v1/studies/DEMO/'),
  koaRequest('GET', '/api/v1/openapi.json'),
  koaRequest('DELETE', '/api/v1/studies/DEMO'),
  koaRequest('POST', '/api/v1/studies/DEMO/patients'),
  koaRequest('GET', '/api/v1/nowhere/at/all'),
];

describe('rememberedRoutes', () => {
  it('finds every request\'s operation and path parameters, the first time and from memory, exactly as openapi-backend\'s router does', async () => {
    const api = new OpenAPIBackend({ definition: routedDocument(loadSpec()), strict: true, validate: false });
    await api.init();
    const routeOf = rememberedRoutes(api.router);
    for (let round = 0; round < 2; round++) {
      for (const request of REQUESTS) {
        const route = routeOf(request);
        const operation = api.router.matchOperation(request);
        expect(route?.operation.operationId, `${request.method} ${request.path} (round ${round})`).to.equal(operation?.operationId);
        if (operation) expect(route?.params, `${request.method} ${request.path}`).to.deep.equal(api.router.parseRequest(request, operation).params);
      }
    }
    expect(routeOf(koaRequest('GET', '/api/v1/studies/DEMO'))?.operation.operationId).to.equal('getStudyDesign');
    expect(routeOf(koaRequest('GET', '/api/v1/studies/D%C3%89MO%20X/patients'))?.params).to.deep.equal({ study_code: 'DÉMO X' });
    expect(routeOf(koaRequest('DELETE', '/api/v1/studies/DEMO'))).to.equal(undefined);
  });

  it('refuses a path that cannot be decoded, before asking the router', async () => {
    const api = new OpenAPIBackend({ definition: routedDocument(loadSpec()), strict: true, validate: false });
    await api.init();
    const routeOf = rememberedRoutes(api.router);
    expect(() => routeOf(koaRequest('GET', '/api/v1/studies/%E0%A4%A'))).to.throw(DomainError).with.property('code', 'invalid_parameter');
  });

  it('asks the router once per method and path', async () => {
    const api = new OpenAPIBackend({ definition: routedDocument(loadSpec()), strict: true, validate: false });
    await api.init();
    const router = api.router;
    let matches = 0;
    const counting = new Proxy(router, {
      get: (target, name) => (name === 'matchOperation'
        ? (request: Request) => { matches++; return target.matchOperation(request); }
        : Reflect.get(target, name) as unknown),
    });
    const routeOf = rememberedRoutes(counting);
    for (let i = 0; i < 3; i++) routeOf(koaRequest('GET', '/api/v1/studies/DEMO'));
    expect(matches).to.equal(1);
    routeOf(koaRequest('GET', '/api/v1/studies/OTHER'));
    expect(matches).to.equal(2);
  });
});
