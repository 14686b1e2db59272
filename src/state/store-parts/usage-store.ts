// UsageStore: what turns' model calls used. Each turn's usage is written by its last fenced flush
// (TranscriptStore, with the turn's end records); read here, summed.
import type { UsageFilter, UsageTotals } from "../types.js";

export interface UsageStore {
  /** Usage summed per model over the turns the filter matches, the most used model first. */
  usageTotals(filter: UsageFilter): Promise<UsageTotals[]>;
}
