// Slack request signing (v0): HMAC-SHA256 over `v0:<timestamp>:<raw body>` with the signing
// secret, sent as `X-Slack-Signature: v0=<hex>` with `X-Slack-Request-Timestamp`.
import { hmacSha256, safeEqual } from "../shared/crypto.js";

/** Requests older or newer than this are refused (replay protection). */
export const SLACK_TIMESTAMP_TOLERANCE_SECONDS = 300;

export function slackSignature(signingSecret: string, timestamp: string, rawBody: Buffer | string): string {
  return `v0=${hmacSha256(signingSecret, `v0:${timestamp}:`, rawBody).toString("hex")}`;
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** What the headers alone show wrong (missing, malformed, stale), before the body is read; null: nothing. */
export function slackHeadersProblem(headers: { timestamp: string | undefined; signature: string | undefined }, nowMs = Date.now()): string | null {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature) return "missing Slack signature headers";
  if (!/^\d{1,12}$/.test(timestamp)) return "malformed Slack request timestamp";
  const skew = Math.abs(nowMs / 1000 - Number(timestamp));
  if (skew > SLACK_TIMESTAMP_TOLERANCE_SECONDS) return "Slack request timestamp is outside the allowed window";
  return null;
}

export function verifySlackSignature(
  signingSecret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  rawBody: Buffer,
  nowMs = Date.now(),
): VerifyResult {
  const { timestamp, signature } = headers;
  const problem = slackHeadersProblem(headers, nowMs);
  if (problem !== null || !timestamp || !signature) return { ok: false, reason: problem ?? "missing Slack signature headers" };
  const expected = slackSignature(signingSecret, timestamp, rawBody);
  if (!safeEqual(expected, signature)) return { ok: false, reason: "Slack signature does not match" };
  return { ok: true };
}
