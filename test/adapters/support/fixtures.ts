// Reads payload fixtures from test/fixtures.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "fixtures");

export function fixtureText(...parts: string[]): string {
  return readFileSync(join(root, ...parts), "utf8");
}

export function fixtureJson<T = Record<string, unknown>>(...parts: string[]): T {
  return JSON.parse(fixtureText(...parts)) as T;
}
