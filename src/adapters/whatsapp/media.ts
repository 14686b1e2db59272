// WhatsApp images a message carried: the media id is looked up when the turn takes the message
// (`GET {api}/{media-id}` with the bearer token: `{url, mime_type, file_size}`), then that URL is
// downloaded with the bearer token too. The token goes to Meta's hosts only (or to the configured
// API URL's origin, for a proxy or a test server), never to a URL that merely claims to be media.
import { downloadMedia } from "../../gateway/media-download.js";
import { formatBytes, MediaError } from "../../gateway/media.js";
import type { FetchedMedia, MediaFetchLimits, MediaRef } from "../../gateway/types.js";

export interface WhatsAppMediaOptions {
  accessToken: string;
  apiUrl: string;
  fetch?: typeof fetch;
}

const META_MEDIA_HOSTS = ["fbsbx.com", "facebook.com", "fbcdn.net", "whatsapp.net"];

/** Where Meta serves WhatsApp media (lookaside.fbsbx.com today), or the API URL's own origin. */
export function isWhatsAppMediaUrl(url: URL, apiUrl: string): boolean {
  if (url.origin === new URL(apiUrl).origin) return true;
  return url.protocol === "https:" && META_MEDIA_HOSTS.some((host) => url.hostname === host || url.hostname.endsWith(`.${host}`));
}

interface MediaInfo {
  url?: unknown;
  mime_type?: unknown;
  file_size?: unknown;
  error?: { message?: unknown; code?: unknown };
}

export async function fetchWhatsAppMedia(ref: MediaRef, limits: MediaFetchLimits, options: WhatsAppMediaOptions): Promise<FetchedMedia> {
  if (!ref.id) throw new MediaError("fetch_failed", "WhatsApp gave no media id for it");
  const doFetch = options.fetch ?? fetch;
  const authorization = `Bearer ${options.accessToken}`;
  let info: MediaInfo;
  try {
    const response = await doFetch(`${options.apiUrl}/${encodeURIComponent(ref.id)}`, {
      headers: { authorization },
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
    info = (await response.json().catch(() => ({}))) as MediaInfo;
    if (!response.ok) {
      const message = typeof info.error?.message === "string" ? ` ${info.error.message}` : "";
      throw new MediaError("fetch_failed", `WhatsApp media lookup answered ${response.status}${message}`);
    }
  } catch (err) {
    if (err instanceof MediaError) throw err;
    throw new MediaError("fetch_failed", `the WhatsApp media lookup failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof info.url !== "string" || info.url === "") throw new MediaError("fetch_failed", "WhatsApp gave no download URL for it");
  if (typeof info.mime_type === "string" && !info.mime_type.toLowerCase().startsWith("image/")) {
    throw new MediaError("unsupported_type", `it is ${info.mime_type}, and only images are read`);
  }
  const size = Number(info.file_size);
  if (Number.isFinite(size) && size > limits.maxBytes) {
    throw new MediaError("too_large", `it is ${formatBytes(size)}, more than the ${formatBytes(limits.maxBytes)} allowed per image`);
  }
  let url: URL;
  try {
    url = new URL(info.url);
  } catch {
    throw new MediaError("blocked_url", "its WhatsApp download URL is not a URL");
  }
  if (!isWhatsAppMediaUrl(url, options.apiUrl)) throw new MediaError("blocked_url", `${url.hostname} is not a WhatsApp media host`);
  const downloaded = await downloadMedia(url.href, {
    maxBytes: limits.maxBytes,
    timeoutMs: limits.timeoutMs,
    headers: { authorization },
    checkUrl: (hop) => {
      if (!isWhatsAppMediaUrl(hop, options.apiUrl)) throw new MediaError("blocked_url", `${hop.hostname} is not a WhatsApp media host`);
    },
    fetch: options.fetch,
  });
  // Meta serves some media as application/octet-stream: the gateway sniffs the bytes anyway.
  return { data: downloaded.data, contentType: downloaded.contentType === "application/octet-stream" ? null : downloaded.contentType };
}
