import type { OperationHandler } from './types.js';

/** GET /openapi.json: the contract itself, exactly as written in spec/openapi.yaml. */
export const getOpenApi: OperationHandler<'getOpenApi'> = (_c, ctx) => Promise.resolve({
  status: 200,
  body: ctx.state.services.spec as never,
});
