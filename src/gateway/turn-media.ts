// The images of an inbox row, gathered when a turn takes it (under the lease): those recorded
// with the row (the API's), then the platform files it references, downloaded now by the
// platform's adapter (fetchMedia) so that recording the message never waited for a download.
// A file that cannot be used is left out with a reason the model, the transcript and the user see.
import type { AttachmentStore, InboxRow, MessageAttachment } from "../state/types.js";
import { imageCountOf, inboundOf } from "./inbox-payload.js";
import { checkImage, formatBytes, MediaError, type MediaSettings } from "./media.js";
import type { FetchedMedia, MediaFetchLimits, MediaRef } from "./types.js";

export type MediaFetcher = (platform: string, ref: MediaRef, limits: MediaFetchLimits) => Promise<FetchedMedia>;

export interface TurnMediaDeps {
  store: AttachmentStore;
  settings: MediaSettings;
  /** The platform adapter's fetchMedia; null when the gateway has none for the platform. */
  fetchMedia: MediaFetcher | null;
}

export interface RejectedMedia {
  name: string;
  reason: string;
}

export interface RowMedia {
  attachments: MessageAttachment[];
  rejected: RejectedMedia[];
}

/** True when the row brought images or file references (most rows bring none: no reads then). */
export function hasMedia(row: InboxRow): boolean {
  return imageCountOf(row) > 0 || (inboundOf(row).attachments?.length ?? 0) > 0;
}

export async function mediaOfRow(row: InboxRow, deps: TurnMediaDeps): Promise<RowMedia> {
  const { settings } = deps;
  const refs = inboundOf(row).attachments ?? [];
  const recorded = imageCountOf(row) > 0 ? await deps.store.inboxAttachments(row.id) : [];
  const attachments: MessageAttachment[] = recorded.map((a) => ({ id: a.id, content_type: a.content_type, size_bytes: a.size_bytes, name: a.name, data: a.data }));
  const rejected: RejectedMedia[] = [];
  let total = attachments.reduce((sum, a) => sum + a.size_bytes, 0);
  for (const [index, ref] of refs.entries()) {
    const name = ref.name || `file ${index + 1}`;
    if (attachments.length >= settings.maxImagesPerMessage) {
      rejected.push({ name, reason: `only ${settings.maxImagesPerMessage} images per message are used` });
      continue;
    }
    try {
      const data = await download(row.platform, ref, name, deps);
      const checked = checkImage(data, settings);
      if (total + data.byteLength > settings.maxMessageBytes) {
        throw new MediaError("too_large", `the message's images would pass the ${formatBytes(settings.maxMessageBytes)} allowed per message`);
      }
      total += data.byteLength;
      attachments.push({ content_type: checked.content_type, size_bytes: data.byteLength, name, data });
    } catch (err) {
      rejected.push({ name, reason: err instanceof MediaError ? err.message : `the download failed: ${err instanceof Error ? err.message : String(err)}` });
    }
  }
  return { attachments, rejected };
}

async function download(platform: string, ref: MediaRef, name: string, deps: TurnMediaDeps): Promise<Uint8Array> {
  const { settings } = deps;
  // Declared by the platform: refuse without downloading what cannot be used.
  if (ref.contentType && !ref.contentType.toLowerCase().startsWith("image/")) {
    throw new MediaError("unsupported_type", `it is ${ref.contentType}, and only images are read`);
  }
  if (ref.size !== undefined && ref.size > settings.maxImageBytes) {
    throw new MediaError("too_large", `it is ${formatBytes(ref.size)}, more than the ${formatBytes(settings.maxImageBytes)} allowed per image`);
  }
  if (!deps.fetchMedia) throw new MediaError("fetch_failed", `files from ${platform} cannot be downloaded here`);
  const fetched = await deps.fetchMedia(platform, ref, { maxBytes: settings.maxImageBytes, timeoutMs: settings.fetchTimeoutMs });
  if (fetched.contentType && !fetched.contentType.startsWith("image/")) {
    throw new MediaError("unsupported_type", `${platform} served ${fetched.contentType}, not an image`);
  }
  return fetched.data;
}

/** What the model reads after the user's text about files left out. */
export function rejectedMediaNote(rejected: readonly RejectedMedia[]): string {
  return rejected.map((r) => `[attachment ${r.name} was not included: ${r.reason}]`).join("\n");
}
