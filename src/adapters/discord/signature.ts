// Discord interaction signatures: Ed25519 over `<X-Signature-Timestamp><raw body>`, checked
// against the application's public key (hex), signature in `X-Signature-Ed25519` (hex).
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { DISCORD_PUBLIC_KEY_HEX } from "./config.js";

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** The application's public key from its hex form (32 bytes). Throws on a malformed key. */
export function discordPublicKey(hex: string): KeyObject {
  if (!DISCORD_PUBLIC_KEY_HEX.test(hex)) throw new Error("DISCORD_PUBLIC_KEY must be 64 hex characters");
  const x = Buffer.from(hex, "hex").toString("base64url");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
}

/** What the headers alone show wrong (missing, malformed), before the body is read; null: nothing. */
export function discordHeadersProblem(headers: { signature: string | undefined; timestamp: string | undefined }): string | null {
  if (!headers.signature || !headers.timestamp) return "missing Discord signature headers";
  if (!/^[0-9a-fA-F]{128}$/.test(headers.signature)) return "malformed Discord signature";
  return null;
}

export function verifyDiscordSignature(
  publicKey: KeyObject,
  headers: { signature: string | undefined; timestamp: string | undefined },
  rawBody: Buffer,
): VerifyResult {
  const { signature, timestamp } = headers;
  const problem = discordHeadersProblem(headers);
  if (problem !== null || !signature || !timestamp) return { ok: false, reason: problem ?? "missing Discord signature headers" };
  const signed = Buffer.concat([Buffer.from(timestamp, "utf8"), rawBody]);
  const valid = verify(null, signed, publicKey, Buffer.from(signature, "hex"));
  return valid ? { ok: true } : { ok: false, reason: "Discord signature does not match" };
}
