// Memory: every V8 isolate of `serve` (the main thread, the workers thread) holds each module it
// imports, so SDKs and clients a configuration does not use are imported lazily, where that
// configuration is known. This keeps them lazy:
// what `serve` and its workers thread import statically, and through the dynamic imports every
// configuration takes, never reaches them.
import { existsSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "..", "..", "src");
const ROOTS = ["main/cli.ts", "main/workers-thread.ts"];

/** Dynamic imports that only some configurations take: the module behind each is loaded when it is used. */
const LAZY = new Set([
  "adapters/discord/index.ts",
  "adapters/telegram/index.ts",
  "adapters/webhook/index.ts",
  "adapters/whatsapp/index.ts",
  "adapters/slack/socket-mode.ts",
  "agent/providers/openai.ts",
  "agent/tools/mcp/servers.ts",
  "main/migrate-store-command.ts",
  "state/postgres/postgres-store.ts",
]);

/** Packages the default configuration (SQLite, the echo model, Slack over the Events API) never needs. */
const UNUSED_BY_DEFAULT = ["openai", "pg", "@slack/socket-mode", "@bull-board/api", "@bull-board/express", "yaml", "discord.js", "grammy", "@modelcontextprotocol/sdk"];

interface Imports {
  static: string[];
  dynamic: string[];
}

/** Specifiers a module loads: static imports and re-exports (type-only ones are erased), and dynamic imports. */
function importsOf(source: string): Imports {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const fromClause = /^\s*(?:import|export)\s+(?!type\b)[^;"']*?\bfrom\s*["']([^"']+)["']/gm;
  const bare = /^\s*import\s*["']([^"']+)["']/gm;
  const dynamic = /\bimport\(\s*["']([^"']+)["']\s*\)/g;
  return {
    static: [...code.matchAll(fromClause), ...code.matchAll(bare)].map((m) => m[1]),
    dynamic: [...code.matchAll(dynamic)].map((m) => m[1]),
  };
}

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** The source file a relative specifier names (`./x.js` is `./x.ts` in src/). */
function resolveLocal(from: string, specifier: string): string {
  const path = resolve(dirname(from), specifier);
  const ts = path.replace(/\.js$/, ".ts");
  return existsSync(ts) ? ts : path;
}

/** Packages reachable from the roots; dynamic imports are followed unless `skip` names their module. */
function reachablePackages(skip: ReadonlySet<string>): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const queue = ROOTS.map((root) => resolve(SRC, root));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const found = importsOf(readFileSync(file, "utf8"));
    for (const [specifier, isDynamic] of [...found.static.map((s) => [s, false] as const), ...found.dynamic.map((s) => [s, true] as const)]) {
      if (specifier.startsWith("node:")) continue;
      if (!specifier.startsWith(".")) {
        // A package imported dynamically is loaded where it is used (the admin dashboard's bull-board).
        if (!isDynamic) packages.add(packageName(specifier));
        continue;
      }
      const target = resolveLocal(file, specifier);
      if (isDynamic && skip.has(relative(SRC, target))) continue;
      if (target.endsWith(".ts")) queue.push(target);
    }
  }
  return packages;
}

describe("lazily imported SDKs", () => {
  it("serve and its workers thread reach none of them without the configuration that needs it", () => {
    const reached = reachablePackages(LAZY);
    expect(UNUSED_BY_DEFAULT.filter((name) => reached.has(name))).toEqual([]);
    // The walk does see packages: the ones every configuration uses.
    expect([...reached]).toEqual(expect.arrayContaining(["bullmq", "ioredis", "better-sqlite3", "@slack/web-api", "express", "zod"]));
  });

  it("sees the SDKs behind the lazy modules when it follows them", () => {
    const reached = reachablePackages(new Set());
    // These are imported (or required) where they are used, not by a module of ours.
    const loadedWhereUsed = ["@bull-board/api", "@bull-board/express", "yaml", "discord.js"];
    const behindLazyModules = UNUSED_BY_DEFAULT.filter((name) => !loadedWhereUsed.includes(name));
    expect(behindLazyModules.filter((name) => !reached.has(name))).toEqual([]);
  });

  it("reads static, re-exported, side-effect and dynamic imports, and skips type-only ones", () => {
    const found = importsOf(
      [
        'import { a } from "./a.js";',
        'import {\n  b,\n  type C,\n} from "pkg-b";',
        'import type { D } from "pkg-d";',
        'export * from "./e.js";',
        'export type { F } from "./f.js";',
        'import "./g.js";',
        '// import { h } from "pkg-h";',
        'const i = await import("./i.js");',
      ].join("\n"),
    );
    expect(found.static.sort()).toEqual(["./a.js", "./e.js", "./g.js", "pkg-b"]);
    expect(found.dynamic).toEqual(["./i.js"]);
  });
});
