import { createRequire } from 'node:module';
import type { OpenAPIRouter, ParsedRequest, Request } from 'openapi-backend';

/**
 * The one place where the service steps into openapi-backend's router (issue 20.2): it remembers each
 * route's operation and parses the usual requests itself. openapi-backend builds its router inside init()
 * and offers no way to give it another, so the shortcuts replace two methods of that router object; side by
 * side they were worth far more than the 5 % the issue sets as the bar (bench/README.md). Both were checked
 * against this version of the library only (test/unit/routerShortcuts.test.ts holds them to its answers):
 * another version refuses to start until the tests are run against it and this pin is moved.
 */
export const OPENAPI_BACKEND_VERSION = '5.21.2';

/** Throws at start-up when the installed openapi-backend is not the version the shortcuts were checked against. */
export function checkOpenapiBackendVersion(installed = (createRequire(import.meta.url)('openapi-backend/package.json') as { version: string }).version): void {
  if (installed !== OPENAPI_BACKEND_VERSION) {
    throw new Error(`openapi-backend ${installed} is installed, but src/handlers/routerShortcuts.ts was checked against ${OPENAPI_BACKEND_VERSION}: run test/unit/routerShortcuts.test.ts against it, then move OPENAPI_BACKEND_VERSION`);
  }
}

/** Installs both shortcuts on the router of an initialised OpenAPIBackend, once its version is checked. */
export function installRouterShortcuts(router: OpenAPIRouter): void {
  checkOpenapiBackendVersion();
  rememberRoutes(router);
  parseRequestsQuickly(router);
}

/** Methods and paths whose operation is remembered; paths carry study codes the client chooses, so the cache is bounded. */
const ROUTES_REMEMBERED = 1000;

/**
 * openapi-backend rebuilds its list of operations and a regular expression per path on every match, and
 * a request is matched twice (app.ts picks the body parser, then handleRequest routes). The contract does
 * not change while the process runs, so the operation found for a method and path is remembered.
 */
export function rememberRoutes(router: OpenAPIRouter): void {
  const match = router.matchOperation.bind(router);
  const found = new Map<string, NonNullable<ReturnType<typeof router.matchOperation>>>();
  router.matchOperation = (req: Request, strict?: boolean) => {
    const key = `${req.method} ${req.path}`;
    const operation = found.get(key) ?? match(req, strict ?? false);
    if (operation && !found.has(key)) {
      if (found.size >= ROUTES_REMEMBERED) found.clear();
      found.set(key, operation);
    }
    return operation;
  };
}

type Operation = NonNullable<Parameters<OpenAPIRouter['parseRequest']>[1]>;

/** How an operation's path parameters are read: bath-es5's pattern for its path template, made once. */
interface PathParameters {
  pattern: RegExp;
  names: string[];
}

const TEMPLATE_PARAMETER = /\{[A-Za-z0-9_-]+\}/g;

/**
 * The pattern and names openapi-backend's `bath(operation.path)` builds for a template, on each parse:
 * `{name}` matches any run of characters but `/`, and each value is decoded with decodeURIComponent.
 * Undefined for a template naming a parameter twice, which only openapi-backend's own parse handles.
 */
function pathParametersOf(template: string): PathParameters | undefined {
  const names = (template.match(TEMPLATE_PARAMETER) ?? []).map((name) => name.slice(1, -1));
  if (new Set(names).size !== names.length) return undefined;
  return { pattern: new RegExp(`^${template.replace(TEMPLATE_PARAMETER, '([^\\/]*)')}$`), names };
}

/** Query parameters that openapi-backend's parse reads in a style of their own (JSON content, or not exploded). */
function hasStyledQuery(operation: Operation): boolean {
  return (operation.parameters ?? []).some((parameter) => !('$ref' in parameter) && parameter.in === 'query'
    && (parameter.content?.['application/json'] !== undefined || parameter.explode === false));
}

/** A member that plain assignment would take for the object's prototype: lodash defines it instead. */
const PROTOTYPE_KEY = '__proto__';

/**
 * A copy of a query whose values are scalars or lists of scalars, as Koa and the coercion give, as lodash's
 * cloneDeep makes it (a plain object, though Koa's query has no prototype); undefined for any other query.
 */
function copyOfPlainQuery(query: Record<string, unknown>): Record<string, unknown> | undefined {
  const copy: Record<string, unknown> = {};
  for (const name of Object.keys(query)) {
    if (name === PROTOTYPE_KEY) return undefined;
    const value = query[name];
    if (Array.isArray(value)) {
      if (value.some((item) => typeof item === 'object' && item !== null)) return undefined;
      copy[name] = [...(value as unknown[])];
    } else if (typeof value === 'object' && value !== null) {
      return undefined;
    } else {
      copy[name] = value;
    }
  }
  return copy;
}

/**
 * openapi-backend parses each request four times: before routing, after it, inside validation, and once
 * more with the coerced values. Each time it clones the headers and the query with lodash, parses the
 * cookie header, and compiles the operation's path template into a regular expression again: the largest
 * part of a small call that is neither Node's HTTP nor the database (bench/README.md). This parse gives
 * the same result for the requests the API gets: a query of strings or lists (Koa's), no cookie header, a body already parsed or none, and no
 * query parameter in a style of its own, with each template's pattern made once. Any other request goes
 * to openapi-backend's own parse; test/unit/routerShortcuts.test.ts holds the two to the same answers.
 */
export function parseRequestsQuickly(router: OpenAPIRouter): void {
  const libraryParse = router.parseRequest.bind(router);
  // The `cookie` package's answer for no cookie: an empty object of its own prototype.
  const noCookies = Object.getPrototypeOf(libraryParse({ method: 'get', path: '/', headers: {}, query: {} }).cookies) as object | null;
  const paths = new Map<string, PathParameters | undefined>();
  const styled = new Map<Operation, boolean>();
  const pathParameters = (template: string) => {
    if (!paths.has(template)) paths.set(template, pathParametersOf(template));
    return paths.get(template);
  };
  const isStyled = (operation: Operation) => {
    let known = styled.get(operation);
    if (known === undefined) styled.set(operation, (known = hasStyledQuery(operation)));
    return known;
  };

  router.parseRequest = (req: Request, operation?: Operation): ParsedRequest => {
    const query = typeof req.query === 'object' && req.query !== null ? copyOfPlainQuery(req.query) : undefined;
    const parameters = operation ? pathParameters(operation.path) : undefined;
    const plainBody = req.body === undefined || typeof req.body === 'object';
    if (!query || !plainBody || (operation && (!parameters || isStyled(operation)))) return libraryParse(req, operation);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers ?? {})) {
      if (name === PROTOTYPE_KEY) return libraryParse(req, operation);
      headers[name.toLowerCase()] = value;
    }
    if (headers.cookie !== undefined) return libraryParse(req, operation);

    let path = req.path?.trim() || '';
    if (!path.startsWith('/')) path = `/${path}`;
    path = path.split('?', 1)[0] ?? '';
    const params: Record<string, string> = {};
    const values = parameters?.pattern.exec(router.normalizePath(path));
    if (parameters && values) parameters.names.forEach((name, i) => { params[name] = decodeURIComponent(values[i + 1] ?? ''); });
    // Object.assign, then members one by one, rather than a spread literal that also sets members (rowToKeyWithMaker says why).
    const parsed = Object.assign({}, req) as ParsedRequest;
    parsed.path = path;
    parsed.method = req.method.trim().toLowerCase();
    parsed.params = params;
    parsed.headers = headers;
    parsed.query = query;
    parsed.cookies = Object.create(noCookies) as Record<string, string>;
    parsed.requestBody = req.body as unknown;
    return parsed;
  };
}
