// The error catalogue: every code on the wire is listed once, with an error status, and is
// answered somewhere; the writers take only listed codes (a `@ts-expect-error` below fails the
// type check the day an unlisted code compiles).
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { errorAnswer, errorBody, HttpError, plainError } from "../../src/gateway/http-errors.js";
import { FRAME_ERRORS, HTTP_ERRORS } from "../../src/shared/error-catalogue.js";

const SRC = resolve(import.meta.dirname, "..", "..", "src");
const CATALOGUE = join(SRC, "shared", "error-catalogue.ts");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && path !== CATALOGUE ? [path] : [];
  });
}

describe("error catalogue", () => {
  it("lists snake_case codes with an error status and a message", () => {
    for (const [code, spec] of Object.entries(HTTP_ERRORS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(spec.status, code).toBeGreaterThanOrEqual(400);
      expect(spec.status, code).toBeLessThan(600);
      expect(spec.message.length, code).toBeGreaterThan(0);
    }
    for (const [code, message] of Object.entries(FRAME_ERRORS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(message.length, code).toBeGreaterThan(0);
    }
  });

  it("holds no code that nothing answers with", () => {
    const sources = sourceFiles(SRC).map((file) => readFileSync(file, "utf8")).join("\n");
    const unused = [...Object.keys(HTTP_ERRORS), ...Object.keys(FRAME_ERRORS)].filter((code) => !sources.includes(`"${code}"`));
    expect(unused).toEqual([]);
  });

  it("answers a code with its status, the default message or the caller's, in the JSON error shape", () => {
    expect(errorAnswer("session_not_found")).toEqual({ status: 404, code: "session_not_found", message: "no such session" });
    expect(errorBody(errorAnswer("session_not_found", "no session s-1"))).toEqual({
      error: { message: "no session s-1", type: "not_found_error", code: "session_not_found" },
    });
    const thrown = new HttpError("too_many_failed_keys", undefined, { "Retry-After": "3" });
    expect([thrown.status, thrown.code, thrown.message, thrown.headers]).toEqual([429, "too_many_failed_keys", HTTP_ERRORS.too_many_failed_keys.message, { "Retry-After": "3" }]);
    expect(plainError("turn_failed", undefined, { session_id: "s-1" })).toEqual({
      status: 502,
      json: { error: { message: "the turn failed", type: "server_error", code: "turn_failed" }, session_id: "s-1" },
    });
  });

  it("takes only listed codes", () => {
    // @ts-expect-error: not a code of the catalogue
    expect(() => errorAnswer("no_such_code")).toThrow(TypeError);
  });
});
