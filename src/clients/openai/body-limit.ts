// The API's body limit. Images come inline as base64 data URLs, so the parser leaves room for a
// message's worth of them (their own caps apply when they are decoded); everything else in the
// body keeps to the configured limit.
import type { CoreConfig } from "../../gateway/config.js";
import { HttpError } from "../../gateway/http-errors.js";
import { inlineImageChars } from "./images.js";

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
