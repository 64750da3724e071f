import { listAuditTrail } from './audit.js';
import { getApiDocs, getApiDocsAsset } from './docs.js';
import { exportOdm, getDataset, listDatasets } from './exports.js';
import { getFhirImport, importFhirNdjson, importFhirRecord, listFhirImports } from './fhir.js';
import { getOpenApi } from './meta.js';
import { createPatient, listPatients } from './patients.js';
import { answerQuery, closeQuery, listQueries, openQuery } from './queries.js';
import { listFormRecords, submitFormRecords } from './records.js';
import { getStudyDesign } from './studies.js';
import type { HandlerMap } from './types.js';

/** Every operation of the spec, by operationId: a missing handler fails the build. */
export const handlers = {
  getStudyDesign,
  createPatient,
  submitFormRecords,
  listPatients,
  listFormRecords,
  listQueries,
  openQuery,
  answerQuery,
  closeQuery,
  listAuditTrail,
  importFhirRecord,
  importFhirNdjson,
  listFhirImports,
  getFhirImport,
  listDatasets,
  getDataset,
  exportOdm,
  getOpenApi,
  getApiDocs,
  getApiDocsAsset,
} satisfies HandlerMap;
