// The Telegram and WhatsApp media fetchers against local servers that answer like the platforms:
// where the token goes, and that it never shows up in a reason a user or the model reads.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTelegramApi } from "../../src/adapters/telegram/api.js";
import { fetchTelegramFile } from "../../src/adapters/telegram/files.js";
import { fetchWhatsAppMedia, isWhatsAppMediaUrl } from "../../src/adapters/whatsapp/media.js";
import { MediaError } from "../../src/gateway/media.js";

const TOKEN = "123456:SECRETtokenPART_never-in-errors";
const LIMITS = { maxBytes: 4096, timeoutMs: 5_000 };
let platform: Server;
let elsewhere: Server;
const elsewhereRequests: IncomingMessage[] = [];
let answer: (path: string, req: IncomingMessage) => { status: number; type: string; body: string | Buffer };

const urlOf = (server: Server): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

beforeAll(async () => {
  platform = createServer((req, res) => {
    const a = answer(new URL(req.url ?? "/", "http://x").pathname, req);
    res.writeHead(a.status, { "content-type": a.type });
    res.end(a.body);
  });
  elsewhere = createServer((req, res) => {
    elsewhereRequests.push(req);
    res.writeHead(200, { "content-type": "image/png" });
    res.end(Buffer.from("89504e470d0a1a0a", "hex"));
  });
  await Promise.all([platform, elsewhere].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
});

afterAll(async () => {
  for (const s of [platform, elsewhere]) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function reason(promise: Promise<unknown>): Promise<MediaError> {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(MediaError);
  return err as MediaError;
}

describe("fetchTelegramFile", () => {
  const options = () => ({ api: createTelegramApi(TOKEN, urlOf(platform)), botToken: TOKEN, apiUrl: urlOf(platform) });

  it("reports Telegram's getFile error without the token", async () => {
    answer = () => ({ status: 400, type: "application/json", body: JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: invalid file_id" }) });
    const err = await reason(fetchTelegramFile({ id: "nope" }, LIMITS, options()));
    expect(err.code).toBe("fetch_failed");
    expect(err.message).toContain("invalid file_id");
    expect(err.message).not.toContain("SECRET");
  });

  it("refuses a file getFile declares too big, without downloading it", async () => {
    const paths: string[] = [];
    answer = (path) => {
      paths.push(path);
      return { status: 200, type: "application/json", body: JSON.stringify({ ok: true, result: { file_id: "f", file_unique_id: "u", file_size: 9000, file_path: "photos/a.jpg" } }) };
    };
    const err = await reason(fetchTelegramFile({ id: "f" }, LIMITS, options()));
    expect(err).toMatchObject({ code: "too_large", message: "it is 8.8 KB, more than the 4.0 KB allowed per image" });
    expect(paths).toEqual([`/bot${TOKEN}/getFile`]);
  });

  it("a failed download's reason does not carry the URL (the token is in its path)", async () => {
    answer = (path) =>
      path.endsWith("/getFile")
        ? { status: 200, type: "application/json", body: JSON.stringify({ ok: true, result: { file_id: "f", file_unique_id: "u", file_path: "photos/a.jpg" } }) }
        : { status: 404, type: "application/json", body: "{}" };
    const err = await reason(fetchTelegramFile({ id: "f" }, LIMITS, options()));
    expect(err.message).toBe("the media server answered 404");
  });
});

describe("fetchWhatsAppMedia", () => {
  const options = () => ({ accessToken: "wa-token", apiUrl: `${urlOf(platform)}/v21.0` });

  it("never sends the token to a URL the lookup names on another host", async () => {
    answer = () => ({ status: 200, type: "application/json", body: JSON.stringify({ url: `http://localhost:${(elsewhere.address() as AddressInfo).port}/m`, mime_type: "image/png", file_size: 8 }) });
    const err = await reason(fetchWhatsAppMedia({ id: "42" }, LIMITS, options()));
    expect(err).toMatchObject({ code: "blocked_url", message: "localhost is not a WhatsApp media host" });
    expect(elsewhereRequests).toHaveLength(0);
  });

  it("stops at the lookup for a type that is not an image, and reports Graph's error", async () => {
    answer = () => ({ status: 200, type: "application/json", body: JSON.stringify({ url: `${urlOf(platform)}/m`, mime_type: "video/mp4", file_size: 8 }) });
    expect(await reason(fetchWhatsAppMedia({ id: "42" }, LIMITS, options()))).toMatchObject({ code: "unsupported_type", message: "it is video/mp4, and only images are read" });
    answer = () => ({ status: 400, type: "application/json", body: JSON.stringify({ error: { message: "Unsupported get request.", code: 100 } }) });
    expect(await reason(fetchWhatsAppMedia({ id: "42" }, LIMITS, options()))).toMatchObject({ code: "fetch_failed", message: "WhatsApp media lookup answered 400 Unsupported get request." });
  });

  it("knows Meta's media hosts over https and the API's own origin", () => {
    const api = "https://graph.facebook.com/v21.0";
    expect(isWhatsAppMediaUrl(new URL("https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1"), api)).toBe(true);
    expect(isWhatsAppMediaUrl(new URL("http://lookaside.fbsbx.com/x"), api)).toBe(false);
    expect(isWhatsAppMediaUrl(new URL("https://fbsbx.com.evil.example/x"), api)).toBe(false);
    expect(isWhatsAppMediaUrl(new URL("http://127.0.0.1:9/x"), "http://127.0.0.1:9/v21.0")).toBe(true);
  });
});
