// Platform payload fixtures from test/fixtures, with the ids a test needs to make unique.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..", "fixtures");

export function fixtureJson<T = Record<string, unknown>>(...parts: string[]): T {
  return JSON.parse(readFileSync(join(root, ...parts), "utf8")) as T;
}

let counter = 0;

/** A short token no other call in this process returns (ids, channels, markers). */
export function uniqueToken(): string {
  counter += 1;
  return `${Date.now().toString(36)}${counter.toString(36)}`.toUpperCase();
}
