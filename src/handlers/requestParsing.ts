import type { OpenAPIRouter, ParsedRequest, Request } from 'openapi-backend';

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
      copy[name] = [...value];
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
 * cookie header, and compiles the operation's path template into a regular expression again; in all
 * about 25 µs of a design call's 160 µs of CPU, the largest part of a small call that is neither Node's
 * HTTP nor the database (bench/README.md). This parse gives the same result for the requests the API
 * gets: a query of strings or lists (Koa's), no cookie header, a body already parsed or none, and no
 * query parameter in a style of its own, with each template's pattern made once. Any other request goes
 * to openapi-backend's own parse; test/unit/requestParsing.test.ts holds the two to the same answers.
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
    const query = typeof req.query === 'object' && req.query !== null ? copyOfPlainQuery(req.query as Record<string, unknown>) : undefined;
    const parameters = operation ? pathParameters(operation.path) : undefined;
    const plainBody = req.body === undefined || typeof req.body === 'object';
    if (!query || !plainBody || (operation && (!parameters || isStyled(operation)))) return libraryParse(req, operation);
    const headers: Record<string, string | string[]> = {};
    for (const name of Object.keys(req.headers ?? {})) {
      if (name === PROTOTYPE_KEY) return libraryParse(req, operation);
      headers[name.toLowerCase()] = req.headers[name];
    }
    if (headers.cookie !== undefined) return libraryParse(req, operation);

    let path = req.path?.trim() || '';
    if (!path.startsWith('/')) path = `/${path}`;
    path = path.split('?')[0];
    const params: Record<string, string> = {};
    const values = parameters?.pattern.exec(router.normalizePath(path));
    if (parameters && values) parameters.names.forEach((name, i) => { params[name] = decodeURIComponent(values[i + 1]); });
    // Object.assign, then members one by one, rather than a spread literal that also sets members (rowToKeyWithMaker says why).
    const parsed = Object.assign({}, req) as ParsedRequest;
    parsed.path = path;
    parsed.method = req.method.trim().toLowerCase();
    parsed.params = params;
    parsed.headers = headers;
    parsed.query = query;
    parsed.cookies = Object.create(noCookies);
    parsed.requestBody = req.body;
    return parsed;
  };
}
