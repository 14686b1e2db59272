// The images of an API request's new message, in hand before the message is recorded: data URLs
// are decoded, https URLs fetched (public addresses only, within the caps and the time limit).
// Every image is checked by its bytes (PNG, JPEG, GIF, WebP); the caps answer 413. A fetch that
// fails says only that: how it failed (refused, reset, TLS, timed out) would map the network
// behind the URL for the client.
import { HttpError, type HttpErrorCode } from "../../gateway/http-errors.js";
import { downloadMedia } from "../../gateway/media-download.js";
import { publicImageUrlCheck } from "../../gateway/media-url-policy.js";
import { checkImage, checkMessageImages, formatBytes, MediaError, type MediaSettings } from "../../gateway/media.js";
import type { InboundImage } from "../../gateway/types.js";

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export async function resolveRequestImages(urls: string[], settings: MediaSettings, fetchImpl?: typeof fetch): Promise<InboundImage[]> {
  try {
    if (urls.length > settings.maxImagesPerMessage) {
      throw new MediaError("too_large", `${urls.length} images in one message; at most ${settings.maxImagesPerMessage} are allowed`);
    }
    const images: InboundImage[] = [];
    for (const [index, url] of urls.entries()) {
      const data = url.startsWith("data:") ? decodeDataUrl(url, index, settings) : await fetchImage(url, index, settings, fetchImpl);
      const checked = checkImage(data, settings, `#${index + 1}`);
      images.push({ contentType: checked.content_type, data: checked.data });
      // Stop early once the message is over its total: no more downloads for nothing.
      checkMessageImages(images, { ...settings, maxImagesPerMessage: Number.MAX_SAFE_INTEGER });
    }
    return images;
  } catch (err) {
    throw err instanceof MediaError ? httpErrorOf(err) : err;
  }
}

function decodeDataUrl(url: string, index: number, settings: MediaSettings): Uint8Array {
  const match = DATA_URL.exec(url);
  if (!match) throw new MediaError("invalid_image", `image #${index + 1}: not a valid data URL`);
  const [, mediaType, params, payload] = match;
  if (!mediaType.toLowerCase().startsWith("image/")) throw new MediaError("unsupported_type", `image #${index + 1}: a data URL of type ${mediaType || "(none)"} is not an image`);
  if (!params.split(";").includes("base64")) throw new MediaError("invalid_image", `image #${index + 1}: the data URL must be base64 encoded`);
  const compact = payload.replace(/\s+/g, "");
  // Refuse by size before decoding: the decoded length follows from the text's.
  const decodedBytes = Math.floor((compact.length * 3) / 4) - (compact.endsWith("==") ? 2 : compact.endsWith("=") ? 1 : 0);
  if (decodedBytes > settings.maxImageBytes) {
    throw new MediaError("too_large", `image #${index + 1} is ${formatBytes(decodedBytes)}, more than the ${formatBytes(settings.maxImageBytes)} allowed per image`);
  }
  if (!BASE64.test(compact)) throw new MediaError("invalid_image", `image #${index + 1}: the data URL is not valid base64`);
  return Buffer.from(compact, "base64");
}

async function fetchImage(url: string, index: number, settings: MediaSettings, fetchImpl?: typeof fetch): Promise<Uint8Array> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new MediaError("blocked_url", `image #${index + 1}: not a valid URL`);
  }
  if (parsed.username || parsed.password) throw new MediaError("blocked_url", `image #${index + 1}: URLs with credentials are not fetched`);
  try {
    const downloaded = await downloadMedia(parsed.href, {
      maxBytes: settings.maxImageBytes,
      timeoutMs: settings.fetchTimeoutMs,
      checkUrl: publicImageUrlCheck({ allowHttpLoopback: settings.allowHttpLoopback }),
      fetch: fetchImpl,
    });
    if (downloaded.contentType && !downloaded.contentType.startsWith("image/")) {
      throw new MediaError("unsupported_type", `the URL served ${downloaded.contentType}, not an image`);
    }
    return downloaded.data;
  } catch (err) {
    if (!(err instanceof MediaError)) throw err;
    throw new MediaError(err.code, `image #${index + 1}: ${err.code === "fetch_failed" ? FETCH_FAILED : err.message}`);
  }
}

const FETCH_FAILED = "the image could not be fetched";

/** Characters of the body that are inline images (data URLs in content parts), unvalidated body. */
export function inlineImageChars(body: unknown): number {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return 0;
  let total = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const url = (part as { image_url?: { url?: unknown } } | null)?.image_url?.url;
      if (typeof url === "string" && url.startsWith("data:")) total += url.length;
    }
  }
  return total;
}

const HTTP_CODES: Record<MediaError["code"], HttpErrorCode> = {
  too_large: "image_too_large",
  unsupported_type: "invalid_image",
  invalid_image: "invalid_image",
  blocked_url: "invalid_image_url",
  fetch_failed: "image_fetch_failed",
};

function httpErrorOf(err: MediaError): HttpError {
  return new HttpError(HTTP_CODES[err.code], err.message);
}
