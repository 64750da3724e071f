import { exportDataset, listDatasets as listStudyDatasets } from '../domain/exports/datasetExport.js';
import { exportOdm as exportStudyOdm } from '../domain/exports/odmExport.js';
import { authenticated } from './authenticated.js';
import { poolStores } from './readRequest.js';
import { StreamedBody } from './streamedBody.js';
import type { OperationHandler } from './types.js';

const NDJSON = 'application/x-ndjson';

function sourceVersion(spec: Record<string, unknown>): string {
  return String((spec.info as { version?: string } | undefined)?.version ?? '1');
}

/** GET /studies/{study_code}/datasets: the datasets the key may read, with their row counts. */
export const listDatasets: OperationHandler<'listDatasets'> = async (_c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  return { status: 200, body: { datasets: await listStudyDatasets(poolStores(services), key, study) } };
};

/** GET /studies/{study_code}/datasets/{dataset}: one dataset as Dataset-JSON v1.1, or its NDJSON form when asked. */
export const getDataset: OperationHandler<'getDataset'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  // JSON unless the client prefers NDJSON: `accepts` weighs the Accept header's q-values.
  const format = ctx.accepts('application/json', NDJSON) === NDJSON ? 'ndjson' : 'json';
  const pieces = await exportDataset(poolStores(services), key, study, c.request.params.dataset, {
    format,
    metadataOnly: Boolean(c.request.query.metadataonly),
    file: {
      sourceVersion: sourceVersion(services.spec),
      metaDataRef: `${services.config.baseUrl}/api/v1/studies/${encodeURIComponent(study.code)}/odm?content=metadata`,
      now: new Date(),
    },
  });
  return { status: 200, body: new StreamedBody(format === 'ndjson' ? NDJSON : 'application/json', pieces) };
};

/** GET /studies/{study_code}/odm: the study as CDISC ODM 1.3.2 XML. */
export const exportOdm: OperationHandler<'exportOdm'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const pieces = await exportStudyOdm(poolStores(services), key, study, {
    content: c.request.query.content ?? 'all',
    audit: Boolean(c.request.query.audit),
    file: { sourceVersion: sourceVersion(services.spec), now: new Date() },
  });
  return { status: 200, body: new StreamedBody('application/xml', pieces) };
};
