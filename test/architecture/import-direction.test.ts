// The map stays true: every import in src/ points down the layers of docs/ARCHITECTURE.md,
// main -> (adapters, clients) -> gateway -> (agent, bus) -> state, and `shared` below them all.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "..", "..", "src");

/** A folder may import folders of a lower rank, and its own files; never one of its rank or above. */
const RANK: Record<string, number> = {
  shared: -1,
  state: 0,
  console: 0,
  agent: 1,
  bus: 1,
  gateway: 2,
  adapters: 3,
  clients: 3,
  main: 4,
};

/** Relative specifiers of static imports, re-exports and dynamic imports. */
function importSpecifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;
  for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

function layerOf(file: string): string {
  return relative(SRC, file).split(sep)[0];
}

/** The breaks in one file: "<file> -> <target folder>" for each import against the direction. */
function breaksIn(file: string, source: string): string[] {
  const from = layerOf(file);
  const breaks: string[] = [];
  for (const specifier of importSpecifiers(source)) {
    const to = layerOf(resolve(dirname(file), specifier));
    if (to === from) continue;
    const allowed = RANK[from] !== undefined && RANK[to] !== undefined && RANK[to] < RANK[from];
    if (!allowed) breaks.push(`${relative(SRC, file)} -> ${to} (${specifier})`);
  }
  return breaks;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

describe("import direction", () => {
  it("every top-level folder of src/ has a place on the map", () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.filter((name) => RANK[name] === undefined)).toEqual([]);
  });

  it("no file in src/ imports against the direction", () => {
    const breaks = sourceFiles(SRC).flatMap((file) => breaksIn(file, readFileSync(file, "utf8")));
    expect(breaks).toEqual([]);
  });

  it("finds a break of each kind the map forbids", () => {
    const at = (path: string) => join(SRC, path);
    expect(breaksIn(at("gateway/ingress.ts"), 'import { x } from "../adapters/slack/index.js";')).toHaveLength(1);
    expect(breaksIn(at("gateway/ingress.ts"), 'export { y } from "../main/config.js";')).toHaveLength(1);
    expect(breaksIn(at("agent/loop.ts"), 'const m = await import("../bus/event-bus.js");')).toHaveLength(1);
    expect(breaksIn(at("state/lease.ts"), 'import type { T } from "../agent/types.js";')).toHaveLength(1);
    expect(breaksIn(at("adapters/slack/adapter.ts"), 'import "../../clients/auth.js";')).toHaveLength(1);
    expect(breaksIn(at("bus/event-bus.ts"), 'import type { G } from "../gateway/types.js";')).toHaveLength(1);
    expect(breaksIn(at("clients/auth.ts"), 'import { z } from "../adapters/index.js";')).toHaveLength(1);
    expect(breaksIn(at("shared/retry-after.ts"), 'import type { S } from "../state/types.js";')).toHaveLength(1);
    // Downward and same-folder imports are fine.
    expect(breaksIn(at("main/server.ts"), 'import { a } from "../adapters/index.js";\nimport { b } from "./config.js";')).toEqual([]);
    expect(breaksIn(at("gateway/ingress.ts"), 'import type { S } from "../state/types.js";')).toEqual([]);
    expect(breaksIn(at("agent/tools/mcp/config.ts"), 'import { intFrom } from "../../../shared/config-section.js";')).toEqual([]);
  });
});
