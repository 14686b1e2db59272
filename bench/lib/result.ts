import type { BenchPostgres } from "./postgres.js";

// What a benchmark hands back: figures (each maybe with a target), notes, and latency samples
// for the chart. Targets are fixed here by the figure, never adjusted to the measurement.

export type Comparison = "<=" | ">=";

export interface Target {
  op: Comparison;
  value: number;
}

export interface Figure {
  /** The key in latest.json. */
  key: string;
  label: string;
  value: number;
  unit: string;
  target?: Target;
}

export interface LatencySeries {
  name: string;
  samplesMs: number[];
  /** Drawn as a marker on the chart. */
  targetMs?: number;
}

export interface BenchResult {
  name: string;
  title: string;
  figures: Figure[];
  /** How it was measured, printed under the table. */
  notes: string[];
  series: LatencySeries[];
  /** More Markdown for latest.md (a side-by-side table, a profile), after the figures table. */
  markdown?: string;
}

export interface BenchContext {
  redisUrl: string;
  /** True when the run started this Redis itself (nothing else uses it). */
  redisPrivate: boolean;
  quick: boolean;
  /** Draw progress bars on stderr. */
  progress: boolean;
  /** A scratch folder for this run (databases, configs); removed afterwards. */
  workDir: string;
  /** `--profile`: benchmarks that can also profile a round do. */
  profile: boolean;
  /** Figures of the benchmarks that already ran in this run, by key. */
  measured: Readonly<Record<string, number>>;
  /**
   * The run's PostgreSQL, started (or checked) on first use: DATABASE_URL, else a private server.
   * Rejects, with the fix, when there is neither.
   */
  postgres(): Promise<BenchPostgres>;
}

export type Benchmark = (ctx: BenchContext) => Promise<BenchResult>;

export function passes(figure: Figure): boolean | null {
  if (!figure.target || !Number.isFinite(figure.value)) return figure.target ? false : null;
  return figure.target.op === "<=" ? figure.value <= figure.target.value : figure.value >= figure.target.value;
}
