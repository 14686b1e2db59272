// Slack files a message shared (`files[]`): downloaded from `url_private` with the bot token when
// the turn takes the message (bot scope `files:read`). The token goes to Slack's own hosts only
// (or to the configured API URL's origin, for a proxy or a test server), never to a URL that
// merely claims to be a file.
import { downloadMedia } from "../../gateway/media-download.js";
import { MediaError } from "../../gateway/media.js";
import type { FetchedMedia, MediaFetchLimits, MediaRef } from "../../gateway/types.js";

/** Where Slack serves files: slack.com and its subdomains (files.slack.com, files-edge...). */
export function isSlackFileUrl(url: URL, apiUrl: string): boolean {
  if (url.origin === new URL(apiUrl).origin) return true;
  return url.protocol === "https:" && (url.hostname === "slack.com" || url.hostname.endsWith(".slack.com"));
}

export async function fetchSlackFile(ref: MediaRef, limits: MediaFetchLimits, options: { botToken: string; apiUrl: string; fetch?: typeof fetch }): Promise<FetchedMedia> {
  if (!ref.url) throw new MediaError("fetch_failed", "Slack gave no download URL for it");
  let url: URL;
  try {
    url = new URL(ref.url);
  } catch {
    throw new MediaError("blocked_url", "its Slack download URL is not a URL");
  }
  const checkUrl = (hop: URL): void => {
    if (!isSlackFileUrl(hop, options.apiUrl)) throw new MediaError("blocked_url", `${hop.hostname} is not a Slack file host`);
  };
  checkUrl(url);
  // Every redirect hop is checked too: a file URL of Slack's may not lead the download elsewhere.
  const downloaded = await downloadMedia(url.href, {
    maxBytes: limits.maxBytes,
    timeoutMs: limits.timeoutMs,
    headers: { authorization: `Bearer ${options.botToken}` },
    checkUrl,
    fetch: options.fetch,
  });
  // Without access (a missing files:read scope, a revoked token) Slack answers 200 with its
  // sign-in page: say so rather than "not an image".
  if (downloaded.contentType === "text/html") {
    throw new MediaError("fetch_failed", "Slack did not let the bot download it (is the files:read scope granted?)");
  }
  return { data: downloaded.data, contentType: downloaded.contentType };
}
