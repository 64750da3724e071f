import type { OpenAPIRouter, Operation, Request } from 'openapi-backend';

/** Methods and paths whose operation is remembered; paths carry study codes the client chooses, so the memory is bounded. */
const ROUTES_REMEMBERED = 1000;

/**
 * The operation of a request's method and path, remembered in front of openapi-backend's public
 * `router.matchOperation` (issue 20.2): the library builds its list of operations and a regular expression
 * per path on every match, and the contract does not change while the process runs. Undefined for a
 * method and path no operation takes, which is not remembered (the caller asks the library why).
 */
export function rememberedRoutes(router: OpenAPIRouter): (request: Request) => Operation | undefined {
  const found = new Map<string, Operation>();
  return (request) => {
    const key = `${request.method} ${request.path}`;
    let operation = found.get(key);
    if (operation === undefined) {
      operation = router.matchOperation(request);
      if (operation === undefined) return undefined;
      if (found.size >= ROUTES_REMEMBERED) found.clear();
      found.set(key, operation);
    }
    return operation;
  };
}
