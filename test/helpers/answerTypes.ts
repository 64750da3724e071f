import type { components, operations } from '../../generated/openapi.js';

/**
 * The body the contract gives an operation's answer of one status, for typing what a test reads from
 * `app.call` (`app.call<AnswerOf<'listRecords', 200>>(…)`): a test then reads members the contract has,
 * and the strict lint (no `any`) holds for tests as for the service. The test app checks every answer
 * against the contract at run time, so the type and the body cannot part.
 */
export type AnswerOf<Op extends keyof operations, Status extends keyof operations[Op]['responses']> =
  operations[Op]['responses'][Status] extends { content: { 'application/json': infer Body } } ? Body
    : operations[Op]['responses'][Status] extends { content: { 'application/problem+json': infer Body } } ? Body
      : never;

/** Every refusal's body (application/problem+json). */
export type Problem = components['schemas']['Problem'];
