// Reading typed fields out of an adapter's opaque reply target.
import { PermanentSendError } from "../../gateway/types.js";

export function optionalString(target: Record<string, unknown>, key: string): string | null {
  const value = target[key];
  if (typeof value === "string" && value !== "") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return null;
}

/** A field send() cannot work without: missing means the target is broken, and retries cannot fix it. */
export function requiredString(target: Record<string, unknown>, key: string, platform: string): string {
  const value = optionalString(target, key);
  if (value === null) throw new PermanentSendError(`${platform} reply target has no ${key}`);
  return value;
}
