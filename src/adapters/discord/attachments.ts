// Discord attachments (`attachments[]`): downloaded from their CDN URL when the turn takes the
// message. Discord signs those URLs itself (ex/is/hm), so no bot token goes with them; only
// Discord's CDN hosts are fetched (or the configured API URL's origin, for a proxy or a test server).
import { downloadMedia } from "../../gateway/media-download.js";
import { MediaError } from "../../gateway/media.js";
import type { FetchedMedia, MediaFetchLimits, MediaRef } from "../../gateway/types.js";

const CDN_HOSTS = new Set(["cdn.discordapp.com", "media.discordapp.net"]);

export function isDiscordAttachmentUrl(url: URL, apiUrl: string): boolean {
  if (url.origin === new URL(apiUrl).origin) return true;
  return url.protocol === "https:" && CDN_HOSTS.has(url.hostname);
}

export async function fetchDiscordAttachment(ref: MediaRef, limits: MediaFetchLimits, options: { apiUrl: string; fetch?: typeof fetch }): Promise<FetchedMedia> {
  if (!ref.url) throw new MediaError("fetch_failed", "Discord gave no URL for it");
  let url: URL;
  try {
    url = new URL(ref.url);
  } catch {
    throw new MediaError("blocked_url", "its Discord URL is not a URL");
  }
  const checkUrl = (hop: URL): void => {
    if (!isDiscordAttachmentUrl(hop, options.apiUrl)) throw new MediaError("blocked_url", `${hop.hostname} is not a Discord CDN host`);
  };
  checkUrl(url);
  // Every redirect hop is checked too: a CDN URL may not lead the download elsewhere.
  const downloaded = await downloadMedia(url.href, { maxBytes: limits.maxBytes, timeoutMs: limits.timeoutMs, checkUrl, fetch: options.fetch });
  return { data: downloaded.data, contentType: downloaded.contentType };
}
