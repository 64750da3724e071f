import { unwrap, type Schemas, type SdxClient } from './client.js';
import type { operations } from './schema.js';

type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

/** The read calls, by the name of the rows they return. */
interface ReadKinds {
  patients: { query: QueryOf<'listPatients'>; page: Schemas['PatientPage']; row: Schemas['PatientRead'] };
  records: { query: QueryOf<'listFormRecords'>; page: Schemas['RecordPage']; row: Schemas['RecordRead'] };
  queries: { query: QueryOf<'listQueries'>; page: Schemas['QueryPage']; row: Schemas['QueryRead'] };
  audit: { query: QueryOf<'listAuditTrail'>; page: Schemas['AuditPage']; row: Schemas['AuditRead'] };
  fhir_imports: { query: QueryOf<'listFhirImports'>; page: Schemas['FhirImportPage']; row: Schemas['FhirImportSummary'] };
}
export type ReadKind = keyof ReadKinds;
export type Page<K extends ReadKind> = ReadKinds[K]['page'];
export type Row<K extends ReadKind> = ReadKinds[K]['row'];
/** The filters of a read call (`site`, `subject`, `visit`, `form`, `status`, `limit`, …); paging is done for you. */
export type Filters<K extends ReadKind> = Omit<ReadKinds[K]['query'], 'after'>;
export type Removal = Schemas['Removal'];

const READ_PAGE: { [K in ReadKind]: (client: SdxClient, study: string, query: ReadKinds[K]['query']) => Promise<Page<K>> } = {
  patients: async (client, study, query) => unwrap(await client.GET('/api/v1/studies/{study_code}/patients', { params: { path: { study_code: study }, query } })),
  records: async (client, study, query) => unwrap(await client.GET('/api/v1/studies/{study_code}/records', { params: { path: { study_code: study }, query } })),
  queries: async (client, study, query) => unwrap(await client.GET('/api/v1/studies/{study_code}/queries', { params: { path: { study_code: study }, query } })),
  audit: async (client, study, query) => unwrap(await client.GET('/api/v1/studies/{study_code}/audit', { params: { path: { study_code: study }, query } })),
  fhir_imports: async (client, study, query) => unwrap(await client.GET('/api/v1/studies/{study_code}/fhir', { params: { path: { study_code: study }, query } })),
};

/** The member of each kind's page that holds its rows. */
const ROWS_MEMBER = { patients: 'patients', records: 'records', queries: 'queries', audit: 'audit', fhir_imports: 'imports' } as const satisfies Record<ReadKind, string>;

/** The rows of a page: `patients`, `records`, `queries`, `audit` or (for `fhir_imports`) `imports`. */
export function rowsOf<K extends ReadKind>(kind: K, page: Page<K>): Row<K>[] {
  return (page as unknown as Record<string, Row<K>[]>)[ROWS_MEMBER[kind]] ?? [];
}

/**
 * What identifies a row across loads, to upsert by: `id` for records, queries and audit rows, `subject`
 * for patients, `import` for FHIR imports.
 */
export function rowKey<K extends ReadKind>(kind: K, row: Row<K>): string {
  if (kind === 'patients') return (row as Row<'patients'>).subject;
  if (kind === 'fhir_imports') return (row as Row<'fhir_imports'>).import;
  return String((row as Row<'records' | 'queries' | 'audit'>).id);
}

/**
 * Every page of a read, in order: each `next` is sent back as `after` with the same filters, until
 * `next` is null. Stop early by breaking out of the loop.
 *
 * @example
 * for await (const page of readPages(client, 'DEMO', 'records', { visit: 'baseline', limit: 1000 })) save(page.records);
 */
export async function* readPages<K extends ReadKind>(client: SdxClient, study: string, kind: K, filters: Filters<K> = {} as Filters<K>): AsyncGenerator<Page<K>, void, undefined> {
  let after: string | undefined;
  do {
    const query = { ...filters, ...(after === undefined ? {} : { after }) } as ReadKinds[K]['query'];
    const page = await READ_PAGE[kind](client, study, query);
    yield page;
    after = page.next ?? undefined;
  } while (after !== undefined);
}

/** Every row of a read, page after page. */
export async function* readRows<K extends ReadKind>(client: SdxClient, study: string, kind: K, filters?: Filters<K>): AsyncGenerator<Row<K>, void, undefined> {
  for await (const page of readPages(client, study, kind, filters)) yield* rowsOf(kind, page);
}

/** Where an incremental loader keeps the watermark between runs (a file, a database row, …). */
export interface WatermarkStore {
  /** The watermark of the last completed run; undefined before the first run, which then loads everything. */
  get(): Promise<string | undefined> | string | undefined;
  set(watermark: string): Promise<void> | void;
}

/** A watermark kept in memory, for a process that runs the loader repeatedly, and for tests. */
export function memoryWatermarkStore(initial?: string): WatermarkStore & { readonly value: string | undefined } {
  let value = initial;
  return {
    get value() {
      return value;
    },
    get: () => value,
    set: (watermark) => {
      value = watermark;
    },
  };
}

/** Where the loaded rows go. Both calls must be idempotent: a run that fails half-way is repeated whole. */
export interface IncrementalSink<K extends ReadKind> {
  /** Insert each row, or replace the row with the same {@link rowKey}. A row may come again in a later run. */
  upsert(rows: Row<K>[]): Promise<void> | void;
  /** Delete every row of these patients: they withdrew consent to the use of their data. */
  remove(removals: Removal[]): Promise<void> | void;
}

export interface IncrementalRun {
  /** The `updated_since` this run sent; undefined for the first, full load. */
  since: string | undefined;
  /** The watermark stored for the next run. */
  watermark: string;
  pages: number;
  rows: number;
  removals: number;
}

export interface IncrementalLoader {
  /** Loads what changed since the stored watermark, then stores the new one. */
  run(): Promise<IncrementalRun>;
}

/**
 * A chain of incremental loads, per the contract ("Reading data"): the first run loads everything; each
 * later run sends the stored `watermark` as `updated_since`, so consecutive runs never miss a row. Rows may
 * come twice, so they are upserted by key. Patients listed in `removed` (first page only) are handed to
 * `sink.remove`. The watermark is stored only once every page of a run is in the sink: a run that fails
 * half-way leaves the old one, and the next run repeats it.
 */
export function incrementalLoader<K extends ReadKind>(
  client: SdxClient,
  study: string,
  kind: K,
  options: { store: WatermarkStore; sink: IncrementalSink<K>; filters?: Omit<Filters<K>, 'updated_since'> },
): IncrementalLoader {
  return {
    async run() {
      const since = (await options.store.get()) ?? undefined;
      const filters = { ...(options.filters ?? {}), ...(since === undefined ? {} : { updated_since: since }) } as Filters<K>;
      const result: Omit<IncrementalRun, 'watermark'> & { watermark?: string } = { since, pages: 0, rows: 0, removals: 0 };
      for await (const page of readPages(client, study, kind, filters)) {
        if (page.removed.length > 0) await options.sink.remove(page.removed);
        const rows = rowsOf(kind, page);
        if (rows.length > 0) await options.sink.upsert(rows);
        // Every page of a run carries the same watermark; the first one is the run's.
        result.watermark ??= page.watermark;
        result.pages += 1;
        result.rows += rows.length;
        result.removals += page.removed.length;
      }
      await options.store.set(result.watermark!);
      return result as IncrementalRun;
    },
  };
}
