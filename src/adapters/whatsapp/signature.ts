// Meta's webhook signature: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed
// with the app secret>`, over the exact bytes received (re-serialised JSON would not match).
import { hmacSha256, safeEqual } from "../shared/crypto.js";

export const WHATSAPP_SIGNATURE_HEADER = "x-hub-signature-256";

export type VerifyResult = { ok: true } | { ok: false; reason: string };

export function whatsappSignature(appSecret: string, rawBody: Buffer | string): string {
  return `sha256=${hmacSha256(appSecret, rawBody).toString("hex")}`;
}

export function verifyWhatsAppSignature(appSecret: string, header: string | undefined, rawBody: Buffer): VerifyResult {
  if (!header) return { ok: false, reason: "missing X-Hub-Signature-256 header" };
  if (!safeEqual(whatsappSignature(appSecret, rawBody), header.trim())) {
    return { ok: false, reason: "X-Hub-Signature-256 does not match the body" };
  }
  return { ok: true };
}

/** The GET handshake's token, compared in constant time. */
export function verifyTokenMatches(expected: string, given: string | null): boolean {
  return given !== null && safeEqual(expected, given);
}
