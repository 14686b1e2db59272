// Telegram photos and files a message carried: looked up with getFile when the turn takes the
// message, then downloaded from `<api>/file/bot<token>/<file_path>`. The token is part of that
// URL, so the URL is never logged nor put into an error message.
import type { Api } from "grammy";
import { downloadMedia } from "../../gateway/media-download.js";
import { formatBytes, MediaError } from "../../gateway/media.js";
import type { FetchedMedia, MediaFetchLimits, MediaRef } from "../../gateway/types.js";
import { grammySignal, telegramDescription } from "./api.js";

export interface TelegramFileOptions {
  api: Pick<Api, "getFile">;
  botToken: string;
  apiUrl: string;
  fetch?: typeof fetch;
}

export async function fetchTelegramFile(ref: MediaRef, limits: MediaFetchLimits, options: TelegramFileOptions): Promise<FetchedMedia> {
  if (!ref.id) throw new MediaError("fetch_failed", "Telegram gave no file id for it");
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let filePath: string | undefined;
  let fileSize: number | undefined;
  try {
    const file = await options.api.getFile(ref.id, grammySignal(signal));
    filePath = file.file_path;
    fileSize = file.file_size;
  } catch (err) {
    // grammY's errors name the method and Telegram's description, never the token.
    const description = telegramDescription(err);
    if (description.includes("file is too big")) throw new MediaError("too_large", "Telegram does not hand bots files that big");
    throw new MediaError("fetch_failed", signal.aborted ? `Telegram did not answer getFile within ${limits.timeoutMs} ms` : `Telegram getFile failed${description ? `: ${description}` : ""}`);
  }
  if (!filePath) throw new MediaError("fetch_failed", "Telegram gave no file path for it");
  if (fileSize !== undefined && fileSize > limits.maxBytes) {
    throw new MediaError("too_large", `it is ${formatBytes(fileSize)}, more than the ${formatBytes(limits.maxBytes)} allowed per image`);
  }
  const path = filePath.split("/").map(encodeURIComponent).join("/");
  const downloaded = await downloadMedia(`${options.apiUrl}/file/bot${options.botToken}/${path}`, {
    maxBytes: limits.maxBytes,
    timeoutMs: limits.timeoutMs,
    // A redirect is never followed with the token: the URL carries it, not a header.
    maxRedirects: 0,
    fetch: options.fetch,
  });
  // Telegram serves many files as application/octet-stream: the gateway sniffs the bytes anyway.
  return { data: downloaded.data, contentType: downloaded.contentType === "application/octet-stream" ? null : downloaded.contentType };
}
