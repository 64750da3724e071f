import { failureLogger } from './logs.js';

/** What identifies the request a failure happened in. */
export interface FailedRequest {
  requestId: string;
  method: string;
  path: string;
}

/**
 * Logs one JSON line to stderr for a failure of the service (not a refusal): the request id the
 * client was given, and the stack, which never goes into an answer. The API's error middleware
 * (src/app.ts) and the portal's error page (src/portal/index.ts) both log through here.
 */
export function logFailure(request: FailedRequest, error: unknown): void {
  failureLogger.error({ request_id: request.requestId, method: request.method, path: request.path, error: error instanceof Error ? error.stack : String(error) });
}
