// The API's body limit. Images come inline as base64 data URLs, so the parser leaves room for a
// message's worth of them (their own caps apply when they are decoded); everything else in the
// body keeps to the configured limit. Both are checked on the raw text before it is parsed, so
// the parser never sees more than the limit's worth of structure.
import type { CoreConfig } from "../../gateway/config.js";
import { HttpError } from "../../gateway/http-errors.js";
import { inlineImageChars } from "./images.js";
import { scanJson } from "./json-scan.js";

/** How deep a request's arrays and objects may nest: far more than any chat request needs. */
export const MAX_JSON_DEPTH = 64;

type LimitConfig = Pick<CoreConfig, "bodyLimitBytes" | "media">;

/** The most bytes the parser reads: the limit plus room for a message's inline images. */
export function parserLimitBytes({ bodyLimitBytes, media }: LimitConfig): number {
  return bodyLimitBytes + Math.ceil((media.maxMessageBytes * 4) / 3) + 1024 * media.maxImagesPerMessage;
}

/** Throws 413 when the body, less its inline images, is over the configured limit. */
export function checkBodyLimit(config: LimitConfig, bodyBytes: number, body: unknown): void {
  if (bodyBytes - inlineImageChars(body) > config.bodyLimitBytes) {
    throw new HttpError("body_too_large");
  }
}

/**
 * Before parsing: 400 when the text nests deeper than MAX_JSON_DEPTH, 413 when it holds more than
 * the limit outside data URLs (a bound below the exact count that checkBodyLimit takes after).
 */
export function checkBeforeParse(config: LimitConfig, text: string): void {
  const scan = scanJson(text, MAX_JSON_DEPTH);
  if (!scan.depthOk) throw new HttpError("json_too_deep");
  if (scan.textChars > config.bodyLimitBytes) throw new HttpError("body_too_large");
}
