/**
 * The CDISC exports of the bulk-read study (100,000 records), in a service process of their own so its
 * peak memory is theirs: every form's dataset as Dataset-JSON NDJSON, one after another, and the whole
 * study as ODM 1.3.2 (`content=data`). Each is reported as records per second against the bulk read's
 * floor (the records selected page by page with plain pg), measured in turn with it; the target is half
 * the floor's rate. The service's peak resident memory over all runs has to stay under 250 MB.
 */
import type { BenchContext } from './lib/context.js';
import { countedRequest, expectStatus, request } from './lib/http.js';
import { ratioAtLeast, summarise, valueBelow, type ScenarioResult } from './lib/results.js';
import { timed } from './lib/stats.js';
import type { BenchStudy } from './lib/world.js';

export async function exportsOfStudy(
  ctx: BenchContext, study: BenchStudy, key: string, total: number, floor: () => Promise<number>, reps: number,
): Promise<ScenarioResult[]> {
  const service = await ctx.service('exports');
  const base = `${service.url}/api/v1/studies/${study.code}`;
  const listed = await request('GET', `${base}/datasets`, { key });
  expectStatus(listed, 200, 'dataset list');
  const formDatasets = (JSON.parse(listed.text) as { datasets: { name: string; table: string | null }[] }).datasets.filter((d) => d.table === null);

  const ndjson = async (): Promise<number> => {
    let rows = 0;
    for (const dataset of formDatasets) {
      const answer = await countedRequest(`${base}/datasets/${dataset.name}`, { key, accept: 'application/x-ndjson' }, '\n');
      if (answer.status !== 200) throw new Error(`dataset ${dataset.name}: ${answer.status}`);
      rows += answer.count - 1; // the first line is the metadata
    }
    if (rows !== total) throw new Error(`NDJSON export: ${rows} rows of ${total}`);
    return rows;
  };
  const odm = async (): Promise<number> => {
    const answer = await countedRequest(`${base}/odm?content=data`, { key }, '</FormData>');
    if (answer.status !== 200) throw new Error(`ODM export: ${answer.status}`);
    if (answer.count !== total) throw new Error(`ODM export: ${answer.count} forms of ${total}`);
    return answer.count;
  };

  ctx.log('exports: warm-up');
  await ndjson();
  await odm();
  service.markMeasuring();
  const ndjsonRuns: number[] = [];
  const odmRuns: number[] = [];
  const floorRuns: number[] = [];
  for (let i = 1; i <= reps; i++) {
    const a = await timed(ndjson);
    const b = await timed(odm);
    const f = await timed(floor);
    ndjsonRuns.push(total / (a.ms / 1000));
    odmRuns.push(total / (b.ms / 1000));
    floorRuns.push(total / (f.ms / 1000));
    ctx.log(`exports ${i}/${reps}: NDJSON ${(a.ms / 1000).toFixed(1)} s, ODM ${(b.ms / 1000).toFixed(1)} s, floor ${(f.ms / 1000).toFixed(1)} s`);
  }
  const peakMb = service.peakMemoryMb();
  await service.stop();
  const floorName = 'the bulk read floor: the records selected page by page with plain pg';
  return [
    summarise({ scenario: 'export_ndjson', title: `Dataset-JSON NDJSON export (${total} records, ${formDatasets.length} datasets)`, unit: 'rows/s', runs: ndjsonRuns, floorName, floorRuns, goal: ratioAtLeast(0.5) }),
    summarise({ scenario: 'export_odm', title: `ODM 1.3.2 export (${total} records)`, unit: 'rows/s', runs: odmRuns, floorName, floorRuns, goal: ratioAtLeast(0.5) }),
    summarise({ scenario: 'export_memory', title: 'exports: service peak memory', unit: 'MB', runs: [peakMb], goal: valueBelow(250, 'MB') }),
  ];
}
