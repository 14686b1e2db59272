// The benchmark's switch: the mechanisms SWITCHBOARD_BENCH_WITHOUT turns off, and a clear error
// for a name it does not know (a typo would otherwise measure the mechanism it meant to remove).
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config-section.js";
import { MECHANISMS, parseBenchWithout } from "../../src/shared/bench-without.js";

describe("SWITCHBOARD_BENCH_WITHOUT", () => {
  it("turns nothing off when unset or empty", () => {
    expect(parseBenchWithout(undefined).size).toBe(0);
    expect(parseBenchWithout("").size).toBe(0);
    expect(parseBenchWithout(" , ").size).toBe(0);
  });

  it("reads a comma-separated list of known mechanisms", () => {
    expect([...parseBenchWithout("write-gate, group-commit")].sort()).toEqual(["group-commit", "write-gate"]);
    expect(parseBenchWithout(MECHANISMS.join(",")).size).toBe(MECHANISMS.length);
  });

  it("rejects an unknown name, naming it and the known ones", () => {
    expect(() => parseBenchWithout("write-gate,write-gates")).toThrow(ConfigError);
    expect(() => parseBenchWithout("write-gates")).toThrow(/SWITCHBOARD_BENCH_WITHOUT: unknown mechanism\(s\) write-gates \(known: write-gate, /);
    expect(() => parseBenchWithout("thread-scheduling")).toThrow(/thread-scheduling/);
  });
});
