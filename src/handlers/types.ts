import type { Context } from 'openapi-backend';
import type { ParameterizedContext } from 'koa';
import type { operations } from '../../generated/openapi.js';
import type { RequestState } from '../requestState.js';
import type { SerializedJson } from './serializedJson.js';
import type { StreamedBody } from './streamedBody.js';

/**
 * The spec's top-level `webhooks` are requests the service sends, not calls it answers: their operations,
 * named `on<Event>Webhook` (test/unit/webhooks.test.ts holds the spec to it), have no handler.
 */
type WebhookOperationId = Extract<keyof operations, `on${string}Webhook`>;
export type OperationId = Exclude<keyof operations, WebhookOperationId>;
type Op<K extends OperationId> = operations[K];
type BodyOf<R> = R extends { content: infer C } ? (C extends Record<string, unknown> ? C[keyof C] : undefined) : undefined;
type RequestBodyOf<K extends OperationId> =
  NonNullable<Op<K>['requestBody']> extends { content: infer C } ? (C extends Record<string, unknown> ? C[keyof C] : never) : never;

/**
 * One variant per declared status: an undeclared status or a wrong body does not compile. A body may
 * come as JSON text already written (SerializedJson) of the declared shape, or be streamed (StreamedBody).
 */
type Reply<K extends OperationId> = {
  [S in keyof Op<K>['responses']]: {
    status: S;
    body: BodyOf<Op<K>['responses'][S]> | SerializedJson<BodyOf<Op<K>['responses'][S]>> | StreamedBody;
    headers?: Record<string, string>;
  };
}[keyof Op<K>['responses']];

export type KoaContext = ParameterizedContext<RequestState>;

export type OperationHandler<K extends OperationId> = (
  c: Context<RequestBodyOf<K>, NonNullable<Op<K>['parameters']['path']>, NonNullable<Op<K>['parameters']['query']>>,
  ctx: KoaContext,
) => Promise<Reply<K>>;

export type HandlerMap = { [K in OperationId]: OperationHandler<K> };
