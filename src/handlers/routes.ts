import type { OpenAPIRouter, Operation, Request } from 'openapi-backend';
import { DomainError } from '../domain/errors.js';

/** Methods and paths whose operation is remembered; paths carry study codes the client chooses, so the memory is bounded. */
const ROUTES_REMEMBERED = 1000;

/** The operation a method and path are for, and the path's parameters as openapi-backend parses them (decoded, not yet coerced). */
export interface Route {
  operation: Operation;
  params: Readonly<Record<string, string>>;
}

/** Refuses a path that cannot be decoded: openapi-backend decodes path parameters with decodeURIComponent, which throws on a broken escape (`%E0%A4%A`). */
function refuseUndecodablePath(path: string): void {
  try {
    decodeURIComponent(path);
  } catch {
    throw new DomainError('invalid_parameter', {}, [{ pointer: '/path', code: 'invalid_encoding' }]);
  }
}

/**
 * The route of a request's method and path, remembered in front of openapi-backend's public router
 * (issue 20.2): on every call the library builds its list of operations and a regular expression per path
 * to match, and compiles the operation's path template again to parse the parameters, while the contract
 * does not change as the process runs. Undefined for a method and path no operation takes, which is not
 * remembered (the caller asks the library why). A path that cannot be decoded is refused before it is
 * matched; a remembered one was decoded when it came first.
 */
export function rememberedRoutes(router: OpenAPIRouter): (request: Request) => Route | undefined {
  const found = new Map<string, Route>();
  return (request) => {
    const key = `${request.method} ${request.path}`;
    let route = found.get(key);
    if (route === undefined) {
      refuseUndecodablePath(request.path);
      const operation = router.matchOperation(request);
      if (operation === undefined) return undefined;
      // The path alone decides the parameters: no query, headers or body, which the library would parse too.
      // Frozen, because every request of this path is handed the same object.
      const params = Object.freeze(router.parseRequest({ method: request.method, path: request.path, headers: {} }, operation).params as Record<string, string>);
      route = { operation, params };
      if (found.size >= ROUTES_REMEMBERED) found.clear();
      found.set(key, route);
    }
    return route;
  };
}
