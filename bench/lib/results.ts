/**
 * What a scenario reports: the median and p95 of its repeated runs, its floor (the same work done the
 * plainest possible way, measured in the same run) and the ratio between them, with the target.
 */
import { at } from '../../test/helpers/only.js';
import { median, percentile, round } from './stats.js';

export interface ScenarioResult {
  scenario: string;
  title: string;
  unit: string;
  median: number;
  p95: number;
  runs: number[];
  /** The floor's median, in the same unit; null where a measurement has no floor. */
  floor: number | null;
  floor_name: string | null;
  floor_runs: number[];
  /**
   * Median over the repetitions of (scenario run ÷ the floor run next to it): pairing runs that ran back
   * to back cancels most of the drift of a shared machine. For times above 1 is slower than the floor;
   * for rates below 1 is slower.
   */
  ratio: number | null;
  target: string | null;
  met: boolean | null;
  details?: Record<string, unknown>;
}

export interface Goal {
  /** Text shown in the table, e.g. `ratio ≤ 3`. */
  text: string;
  met: (r: { median: number; ratio: number | null }) => boolean;
}

export const ratioAtMost = (limit: number): Goal => ({ text: `ratio ≤ ${limit}`, met: (r) => r.ratio !== null && r.ratio <= limit });
export const ratioAtLeast = (limit: number, shown = String(limit)): Goal => ({ text: `ratio ≥ ${shown}`, met: (r) => r.ratio !== null && r.ratio >= limit });
export const valueBelow = (limit: number, unit: string): Goal => ({ text: `< ${limit} ${unit}`, met: (r) => r.median < limit });

export function summarise(input: {
  scenario: string;
  title: string;
  unit: string;
  runs: number[];
  floorName?: string;
  floorRuns?: number[];
  goal?: Goal;
  details?: Record<string, unknown>;
}): ScenarioResult {
  const floorRuns = input.floorRuns ?? [];
  const paired = floorRuns.length === input.runs.length && floorRuns.length > 0;
  const ratio = floorRuns.length === 0
    ? null
    : paired ? median(input.runs.map((v, i) => v / at(floorRuns, i, 'the floor runs'))) : median(input.runs) / median(floorRuns);
  const med = median(input.runs);
  return {
    scenario: input.scenario,
    title: input.title,
    unit: input.unit,
    median: round(med),
    p95: round(percentile(input.runs, 0.95)),
    runs: input.runs.map(round),
    floor: floorRuns.length > 0 ? round(median(floorRuns)) : null,
    floor_name: input.floorName ?? null,
    floor_runs: floorRuns.map(round),
    ratio: ratio === null ? null : round(ratio),
    target: input.goal?.text ?? null,
    met: input.goal ? input.goal.met({ median: med, ratio }) : null,
    ...(input.details ? { details: input.details } : {}),
  };
}

const cell = (v: number | string | null | boolean) => (v === null ? '–' : typeof v === 'boolean' ? (v ? 'yes' : '**no**') : String(v));

/** The results as a markdown table, one row per measurement. */
export function markdownTable(results: ScenarioResult[]): string {
  const lines = [
    '| scenario | median | p95 | unit | floor | ratio | target | met |',
    '|---|---:|---:|---|---:|---:|---|---|',
    ...results.map((r) => `| ${r.title} | ${cell(r.median)} | ${cell(r.p95)} | ${r.unit} | ${cell(r.floor)} | ${cell(r.ratio)} | ${cell(r.target)} | ${cell(r.met)} |`),
  ];
  return lines.join('\n');
}
