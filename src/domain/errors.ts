import type { ErrorCode } from './errorCodes.js';

export type { ErrorCode } from './errorCodes.js';

/**
 * The one error type the domain throws. It carries a stable machine-readable `code` and the
 * parameters its message needs; it knows no HTTP status and no sentence in any language.
 * `src/errorStatus.ts` is the single table from code to status, `src/messages` from code to English and Russian text.
 */
export interface FieldError {
  /** JSON pointer (RFC 6901) to the offending member of the request, e.g. `/records/3/values/sbp`. */
  pointer: string;
  code: string;
  params?: Record<string, unknown>;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly params: Record<string, unknown> = {},
    readonly fieldErrors: FieldError[] = [],
  ) {
    super(code);
    this.name = 'DomainError';
  }
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}
