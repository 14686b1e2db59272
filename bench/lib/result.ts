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
}

export interface BenchContext {
  redisUrl: string;
  quick: boolean;
  /** Draw progress bars on stderr. */
  progress: boolean;
  /** A scratch folder for this run (databases, configs); removed afterwards. */
  workDir: string;
}

export type Benchmark = (ctx: BenchContext) => Promise<BenchResult>;

export function passes(figure: Figure): boolean | null {
  if (!figure.target || !Number.isFinite(figure.value)) return figure.target ? false : null;
  return figure.target.op === "<=" ? figure.value <= figure.target.value : figure.value >= figure.target.value;
}
