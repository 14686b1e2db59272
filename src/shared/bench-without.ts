// The benchmark's switch (bench/mechanisms.ts): SWITCHBOARD_BENCH_WITHOUT names performance
// mechanisms to turn off, so one build can be measured with and without each. Not a setting for
// operators (the README does not list it); each mechanism asks `without(name)` at its one
// decision point. An unknown name stops the start, so a typo never measures the wrong thing.
import { ConfigError } from "./config-section.js";

export const BENCH_WITHOUT_ENV = "SWITCHBOARD_BENCH_WITHOUT";

export const MECHANISMS = [
  "write-gate",
  "group-commit",
  "local-hand-off",
  "wal-checkpointer",
  "delta-coalescing",
  "buffered-fetch",
] as const;

export type Mechanism = (typeof MECHANISMS)[number];

const KNOWN: ReadonlySet<string> = new Set(MECHANISMS);

/** The mechanisms a comma-separated list turns off; throws ConfigError on a name it does not know. */
export function parseBenchWithout(value: string | undefined): ReadonlySet<Mechanism> {
  const names = (value ?? "").split(",").map((name) => name.trim()).filter(Boolean);
  const unknown = names.filter((name) => !KNOWN.has(name));
  if (unknown.length > 0) {
    throw new ConfigError(`${BENCH_WITHOUT_ENV}: unknown mechanism(s) ${unknown.join(", ")} (known: ${MECHANISMS.join(", ")})`);
  }
  return new Set(names as Mechanism[]);
}

let turnedOff: ReadonlySet<Mechanism> | null = null;

/** Reads the switch (once per thread); the start calls it first so a bad list fails there. */
export function benchWithout(): ReadonlySet<Mechanism> {
  turnedOff ??= parseBenchWithout(process.env[BENCH_WITHOUT_ENV]);
  return turnedOff;
}

/** This mechanism is turned off for a benchmark's comparison. */
export function without(name: Mechanism): boolean {
  return benchWithout().has(name);
}
