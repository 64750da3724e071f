import type { KeyContext } from '../apiKeys/keyContext.js';
import { DomainError } from '../errors.js';
import type { ExportStore, ReadLogStore, Study, StudyStore } from '../stores.js';
import { datasetRows, datasetsOf, type DatasetDefinition } from './datasets.js';
import { exportScopeOf, formIdsOf } from './exportScope.js';

type Stores = { studies: StudyStore; exports: ExportStore; readLog: ReadLogStore };

export interface DatasetSummary { name: string; label: string; itemGroupOID: string; form: string; table: string | null; records: number }

/** What the file says of where it comes from (Dataset-JSON's `sourceSystem`, `metaDataRef`). */
export interface DatasetFileContext { sourceVersion: string; metaDataRef: string; now: Date }

export type DatasetFormat = 'json' | 'ndjson';

/** Dataset-JSON wants date-times as ISO 8601; seconds are as precise as a reader needs. */
function isoSeconds(time: Date): string {
  return `${time.toISOString().slice(0, 19)}Z`;
}

/** The datasets a key may read, with their row counts, from one snapshot; the call enters the read log. */
export async function listDatasets(stores: Stores, key: KeyContext, study: Study): Promise<DatasetSummary[]> {
  const { design, ids, scope } = await exportScopeOf(stores.studies, key, study);
  const snapshot = await stores.exports.openSnapshot();
  try {
    const summaries: DatasetSummary[] = [];
    for (const dataset of datasetsOf(design, design.forms)) {
      const records = await snapshot.count(scope, formIdsOf(ids, [dataset.form.code]), dataset.table?.code);
      summaries.push({ name: dataset.name, label: dataset.label, itemGroupOID: dataset.itemGroupOID, form: dataset.form.code, table: dataset.table?.code ?? null, records });
    }
    // A list of datasets holds no patient's data: it is logged, with no rows read.
    await stores.readLog.logRead({ keyId: key.keyId, studyId: study.id, operation: 'datasets', filters: {}, rows: 0 });
    return summaries;
  } finally {
    await snapshot.close();
  }
}

function metadataOf(dataset: DatasetDefinition, study: Study, records: number, lastModified: Date | null, file: DatasetFileContext) {
  const created = isoSeconds(file.now);
  return {
    datasetJSONCreationDateTime: created,
    datasetJSONVersion: '1.1.0',
    fileOID: `sdx/${study.code}/${dataset.name}/${created}`,
    // The standard asks that it be no later than the file's creation.
    ...(lastModified ? { dbLastModifiedDateTime: isoSeconds(lastModified > file.now ? file.now : lastModified) } : {}),
    originator: 'Study Data Exchange (sdx)',
    sourceSystem: { name: 'Study Data Exchange (sdx)', version: file.sourceVersion },
    studyOID: study.code,
    metaDataVersionOID: `MDV.${study.designHash.slice(0, 16)}`,
    metaDataRef: file.metaDataRef,
    itemGroupOID: dataset.itemGroupOID,
    records,
    name: dataset.name,
    label: dataset.label,
    columns: dataset.columns,
  };
}

/**
 * One dataset as Dataset-JSON v1.1 text, in pieces as its rows are read: `json` (one object whose
 * `rows` come last) or `ndjson` (the metadata on the first line, then a row a line). The counts and
 * rows come from one snapshot; the read is logged with the number of rows before the first piece.
 * Breaking off the iteration (a client that goes away) ends the snapshot.
 */
export async function exportDataset(
  stores: Stores, key: KeyContext, study: Study, name: string,
  options: { format: DatasetFormat; metadataOnly: boolean; file: DatasetFileContext },
): Promise<AsyncIterable<string>> {
  const { design, ids, scope } = await exportScopeOf(stores.studies, key, study);
  const dataset = datasetsOf(design, design.forms).find((d) => d.name === name);
  if (!dataset) throw new DomainError('dataset_not_found', { name });
  const formIds = formIdsOf(ids, [dataset.form.code]);
  const snapshot = await stores.exports.openSnapshot();
  try {
    const records = await snapshot.count(scope, formIds, dataset.table?.code);
    const metadata = metadataOf(dataset, study, records, await snapshot.lastModified(scope, formIds), options.file);
    await stores.readLog.logRead({
      keyId: key.keyId, studyId: study.id, operation: 'dataset',
      filters: { dataset: name, format: options.format, ...(options.metadataOnly ? { metadataonly: true } : {}) },
      rows: options.metadataOnly ? 0 : records,
    });
    return datasetText(metadata, options, options.metadataOnly ? undefined : (async function* () {
      for await (const batch of snapshot.recordBatches(scope, formIds, { withAudit: false })) yield batch.flatMap((record) => datasetRows(design, dataset, record));
    })(), () => snapshot.close());
  } catch (error) {
    await snapshot.close();
    throw error;
  }
}

/** The text of a dataset: its metadata, then its rows, which come in batches, one piece of text per batch. */
async function* datasetText(
  metadata: Record<string, unknown>, options: { format: DatasetFormat }, rowBatches: AsyncIterable<unknown[][]> | undefined, close: () => Promise<void>,
): AsyncGenerator<string> {
  try {
    if (options.format === 'ndjson') {
      yield `${JSON.stringify(metadata)}\n`;
      if (rowBatches) for await (const rows of rowBatches) yield rows.map((row) => `${JSON.stringify(row)}\n`).join('');
      return;
    }
    const head = JSON.stringify(metadata);
    if (!rowBatches) {
      yield head;
      return;
    }
    yield `${head.slice(0, -1)},"rows":[`;
    let first = true;
    for await (const rows of rowBatches) {
      if (rows.length === 0) continue;
      yield `${first ? '' : ','}${rows.map((row) => JSON.stringify(row)).join(',')}`;
      first = false;
    }
    yield ']}';
  } finally {
    await close();
  }
}
