// Constant-time comparisons and HMAC helpers for signature checks.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * Compares two secrets or signatures in constant time. Both sides are hashed first so that
 * inputs of different lengths are compared without leaking the expected length.
 */
export function safeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function hmacSha256(key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac("sha256", key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}
