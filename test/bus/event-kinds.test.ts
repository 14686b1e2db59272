// The WebSocket docs (README and docs/clients.md) name every event kind there is, from the one
// list publishers are typed against, and the table in docs/clients.md no kind that is not on it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { EVENT_KINDS } from "../../src/bus/types.js";

const ROOT = resolve(import.meta.dirname, "..", "..");

/** The kinds in the first column of the event table of docs/clients.md, in order. */
function documentedKinds(): string[] {
  const text = readFileSync(resolve(ROOT, "docs", "clients.md"), "utf8");
  const lines = text.slice(text.indexOf("| kind | when |")).split("\n").slice(2);
  const rows = lines.slice(0, lines.findIndex((line) => !line.startsWith("|")));
  return rows.map((row) => /^\| `([^`]+)` \|/.exec(row)?.[1] ?? row);
}

describe("event kinds", () => {
  it("are each documented once in the WebSocket docs, in the list's order", () => {
    expect(documentedKinds()).toEqual([...EVENT_KINDS]);
  });

  it("are all named in the README's WebSocket section, which points to those docs", () => {
    const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### OpenAI-compatible API and WebSocket"), readme.indexOf("### Sessions API"));
    for (const kind of EVENT_KINDS) expect(section, kind).toContain(`\`${kind}\``);
    expect(section).toContain("(docs/clients.md)");
  });
});
