// Webhook signatures, both ways: verifying inbound deliveries and signing callbacks, so a
// receiver can check our callbacks with the same functions.
//
// github:   X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>; id in X-GitHub-Delivery.
// standard: Standard Webhooks — webhook-id, webhook-timestamp (unix s), webhook-signature:
//           space-separated `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`; the key is
//           the base64 after `whsec_` when the secret has that prefix, else the secret's bytes.
import { hmacSha256, safeEqual } from "../shared/crypto.js";

export type WebhookStyle = "github" | "standard";
export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** Standard Webhooks tolerance for the timestamp, both directions. */
export const STANDARD_WEBHOOK_TOLERANCE_SECONDS = 300;

export function githubSignature(secret: string, body: Buffer | string): string {
  return `sha256=${hmacSha256(secret, body).toString("hex")}`;
}

export function verifyGithubSignature(secret: string, body: Buffer | string, header: string | undefined): VerifyResult {
  if (!header) return { ok: false, reason: "missing X-Hub-Signature-256 header" };
  return safeEqual(githubSignature(secret, body), header.trim())
    ? { ok: true }
    : { ok: false, reason: "webhook signature does not match" };
}

export function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith("whsec_") ? Buffer.from(secret.slice("whsec_".length), "base64") : Buffer.from(secret, "utf8");
}

export function standardSignature(secret: string, id: string, timestamp: string | number, body: Buffer | string): string {
  return `v1,${hmacSha256(standardWebhookKey(secret), `${id}.${timestamp}.`, body).toString("base64")}`;
}

/** What a standard-style delivery's headers alone show wrong (missing, malformed, stale); null: nothing. */
export function standardHeadersProblem(
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined },
  options: { nowMs?: number; toleranceSeconds?: number } = {},
): string | null {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) return "missing webhook-id, webhook-timestamp or webhook-signature header";
  if (!/^\d{1,12}$/.test(timestamp)) return "malformed webhook-timestamp";
  const nowSeconds = (options.nowMs ?? Date.now()) / 1000;
  const tolerance = options.toleranceSeconds ?? STANDARD_WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) return "webhook-timestamp is outside the allowed window";
  return null;
}

/** What a delivery's headers alone show wrong in the route's style, before the body is read; null: nothing. */
export function webhookHeadersProblem(style: "github" | "standard", header: (name: string) => string | undefined, nowMs?: number): string | null {
  if (style === "github") return header("x-hub-signature-256") ? null : "missing X-Hub-Signature-256 header";
  return standardHeadersProblem({ id: header("webhook-id"), timestamp: header("webhook-timestamp"), signature: header("webhook-signature") }, { nowMs });
}

export function verifyStandardSignature(
  secret: string,
  headers: { id: string | undefined; timestamp: string | undefined; signature: string | undefined },
  body: Buffer | string,
  options: { nowMs?: number; toleranceSeconds?: number } = {},
): VerifyResult {
  const { id, timestamp, signature } = headers;
  const problem = standardHeadersProblem(headers, options);
  if (problem !== null || !id || !timestamp || !signature) return { ok: false, reason: problem ?? "missing webhook headers" };
  const expected = standardSignature(secret, id, timestamp, body);
  // Several signatures may be listed (key rotation); any v1 match is enough. Compare them all.
  let matched = false;
  for (const candidate of signature.split(" ")) {
    if (candidate.startsWith("v1,") && safeEqual(expected, candidate)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: "webhook signature does not match" };
}

/** Verifies an inbound delivery in the route's style. `headers` are read case-insensitively. */
export function verifyWebhook(
  style: WebhookStyle,
  secret: string,
  header: (name: string) => string | undefined,
  body: Buffer,
  nowMs = Date.now(),
): VerifyResult {
  if (style === "github") return verifyGithubSignature(secret, body, header("x-hub-signature-256"));
  return verifyStandardSignature(
    secret,
    { id: header("webhook-id"), timestamp: header("webhook-timestamp"), signature: header("webhook-signature") },
    body,
    { nowMs },
  );
}

/** The headers that sign an outbound body in the given style. */
export function signWebhook(
  style: WebhookStyle,
  secret: string,
  body: string,
  options: { id: string; nowMs?: number; event?: string },
): Record<string, string> {
  if (style === "github") {
    return {
      "X-Hub-Signature-256": githubSignature(secret, body),
      "X-GitHub-Delivery": options.id,
      "X-GitHub-Event": options.event ?? "switchboard_reply",
    };
  }
  const timestamp = String(Math.floor((options.nowMs ?? Date.now()) / 1000));
  return {
    "webhook-id": options.id,
    "webhook-timestamp": timestamp,
    "webhook-signature": standardSignature(secret, options.id, timestamp, body),
  };
}
