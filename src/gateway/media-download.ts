// Downloads one media file over HTTP within a size cap and a time limit: the declared length is
// checked first, then the bytes as they arrive (the download stops past the cap). Redirects are
// followed by hand so every hop passes the caller's URL check, and credentials (headers) go only
// to the origin they were meant for. When the check resolved a host, the connection goes to the
// addresses it checked, not to a second lookup's answer (which DNS rebinding could change).
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { Agent, fetch as undiciFetch } from "undici";
import { MediaError, formatBytes } from "./media.js";

/** What a URL check that resolved the host let through: the only addresses the hop connects to. */
export interface CheckedUrl {
  addresses: readonly string[];
}

export interface DownloadOptions {
  maxBytes: number;
  timeoutMs: number;
  /** Sent to the first URL's origin only (a redirect elsewhere does not carry them). */
  headers?: Record<string, string>;
  /**
   * Throws (a MediaError "blocked_url") for a URL that may not be fetched; checked on every hop.
   * Its addresses, when it returns them, are where that hop connects.
   */
  checkUrl?: (url: URL) => void | CheckedUrl | Promise<void | CheckedUrl>;
  signal?: AbortSignal;
  maxRedirects?: number;
  fetch?: typeof fetch;
}

export interface Downloaded {
  data: Buffer;
  /** The Content-Type the server sent (without parameters), or null. */
  contentType: string | null;
  /** The URL the bytes came from, after redirects. */
  url: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export async function downloadMedia(url: string, options: DownloadOptions): Promise<Downloaded> {
  const doFetch = options.fetch ?? fetch;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new MediaError("blocked_url", "the media URL is not a valid URL");
  }
  const origin = current.origin;
  for (let hop = 0; hop <= (options.maxRedirects ?? 3); hop++) {
    const checked = await options.checkUrl?.(current);
    const init = { headers: current.origin === origin ? options.headers : undefined, redirect: "manual", signal } as const;
    const pinned = checked && checked.addresses.length > 0 ? new Agent({ connect: { lookup: lookupOnly(checked.addresses) } }) : null;
    let response: Response;
    try {
      response = pinned ? await fetchPinned(current, init, pinned) : await doFetch(current, init);
    } catch (err) {
      void pinned?.destroy();
      throw new MediaError("fetch_failed", timeout.aborted ? `the download took longer than ${options.timeoutMs} ms` : `the download failed: ${errorText(err)}`);
    }
    const location = response.headers.get("location");
    if (REDIRECTS.has(response.status) && location) {
      await response.body?.cancel().catch(() => undefined);
      void pinned?.destroy();
      current = new URL(location, current);
      continue;
    }
    try {
      return await readResponse(response, current, options, () => timeout.aborted);
    } finally {
      void pinned?.destroy();
    }
  }
  throw new MediaError("fetch_failed", "the media URL redirected too many times");
}

async function readResponse(response: Response, url: URL, options: DownloadOptions, timedOut: () => boolean): Promise<Downloaded> {
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new MediaError("fetch_failed", `the media server answered ${response.status}`);
  }
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > options.maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new MediaError("too_large", `the file is ${formatBytes(declared)}, more than the ${formatBytes(options.maxBytes)} allowed`);
  }
  const data = await readCapped(response, options.maxBytes, timedOut, options.timeoutMs);
  const contentType = response.headers.get("content-type")?.split(";")[0].trim().toLowerCase() || null;
  return { data, contentType, url: url.href };
}

/** A lookup that answers every name with the checked addresses: the connection goes nowhere else. */
function lookupOnly(addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_hostname, options, callback) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0].address, entries[0].family);
  };
}

/** One hop through `dispatcher` (undici's fetch: the global one takes no dispatcher of this undici). */
async function fetchPinned(url: URL, init: RequestInit, dispatcher: Agent): Promise<Response> {
  return (await undiciFetch(url, { ...init, dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as Response;
}

async function readCapped(response: Response, maxBytes: number, timedOut: () => boolean, timeoutMs: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new MediaError("too_large", `the file is more than the ${formatBytes(maxBytes)} allowed`);
      }
      parts.push(value);
    }
  } catch (err) {
    if (err instanceof MediaError) throw err;
    throw new MediaError("fetch_failed", timedOut() ? `the download took longer than ${timeoutMs} ms` : `the download failed: ${errorText(err)}`);
  }
  return Buffer.concat(parts);
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
