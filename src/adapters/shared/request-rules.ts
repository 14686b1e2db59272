// What a platform's signed route asks of a request before its body is read (PlatformRequestRule,
// checked by the HTTP server's guard): the same limit its body parser uses, and the header checks
// its signature check starts with, as a catalogue answer.
import type { IncomingHttpHeaders } from "node:http";
import { errorAnswer, type ErrorAnswer, type HttpErrorCode } from "../../gateway/http-errors.js";
import type { PlatformRequestRule } from "../../gateway/types.js";

/** The body limit of a platform route: the configured one, within what the platform sends. */
export function platformBodyLimit(configured: number, platformMax: number): number {
  return Math.min(configured, platformMax);
}

/** A rule whose refusal is `problem`'s reason (null: none) under one catalogue code. */
export function headerRule(
  path: string,
  maxBodyBytes: number,
  code: HttpErrorCode,
  problem: (headers: IncomingHttpHeaders, nowMs: number) => string | null,
): PlatformRequestRule {
  return {
    path,
    maxBodyBytes,
    refusal(headers, nowMs): ErrorAnswer | null {
      const reason = problem(headers, nowMs);
      return reason === null ? null : errorAnswer(code, reason);
    },
  };
}
