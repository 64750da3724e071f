import type { OpenAPIRouter, Operation, Request } from 'openapi-backend';

/** Methods and paths whose operation is remembered; paths carry study codes the client chooses, so the memory is bounded. */
const ROUTES_REMEMBERED = 1000;

/** The operation a method and path are for, and the path's parameters as openapi-backend parses them (decoded, not yet coerced). */
export interface Route {
  operation: Operation;
  params: Record<string, string>;
}

/**
 * The route of a request's method and path, remembered in front of openapi-backend's public router
 * (issue 20.2): on every call the library builds its list of operations and a regular expression per path
 * to match, and compiles the operation's path template again to parse the parameters, while the contract
 * does not change as the process runs. Undefined for a method and path no operation takes, which is not
 * remembered (the caller asks the library why). The caller has refused a path that cannot be decoded.
 */
export function rememberedRoutes(router: OpenAPIRouter): (request: Request) => Route | undefined {
  const found = new Map<string, Route>();
  return (request) => {
    const key = `${request.method} ${request.path}`;
    let route = found.get(key);
    if (route === undefined) {
      const operation = router.matchOperation(request);
      if (operation === undefined) return undefined;
      // The path alone decides the parameters: no query, headers or body, which the library would parse too.
      const params = router.parseRequest({ method: request.method, path: request.path, headers: {} }, operation).params as Record<string, string>;
      route = { operation, params };
      if (found.size >= ROUTES_REMEMBERED) found.clear();
      found.set(key, route);
    }
    return route;
  };
}
