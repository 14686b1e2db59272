// The HTTP fast path for POST /v1/chat/completions answers exactly as the express route does.
// Each case goes to two real servers on loopback built from the same gateway parts (its ingress,
// store and event bus, with workers running the echo model): express alone, and the fast path in
// front of express (counting what reaches express); then a running gateway shows its server is
// wired that way.
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyCheck } from "../../src/clients/auth.js";
import { hostAllowed, NO_EXTRA_BROWSER_RULES } from "../../src/clients/browser-rules.js";
import { parserLimitBytes } from "../../src/clients/openai/body-limit.js";
import { chatCompletionsRoute, createApiServerRouter, type ApiServerDeps } from "../../src/clients/openai/index.js";
import { protectedAccess } from "../../src/clients/protected-access.js";
import { buildApp } from "../../src/main/app.js";
import { withFastPath } from "../../src/main/http-fast-path.js";
import { silentLogger } from "../adapters/support/http.js";
import { rawRequest, type RawResponse } from "../bad-input/raw-http.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { answerOf, chunkedRequest } from "./support/side-by-side.js";

const API_KEY = "fast-path-api-key-0123456789";
const PATH = "/v1/chat/completions";
const LIMIT = 4096;

interface ApiSide {
  url: string;
  /** Requests that reached the express app. */
  expressHits: number;
  close(): Promise<void>;
}

/** The API in the gateway's express app, with or without the fast path in front; each side its own key count. */
async function serveApi(deps: ApiServerDeps, options: { fast: boolean; apiKey: string | null }): Promise<ApiSide> {
  const keyCheck = new ApiKeyCheck(options.apiKey);
  const rules = NO_EXTRA_BROWSER_RULES;
  const app = buildApp({ logger: silentLogger, apiKey: options.apiKey, keyCheck, publicRoutes: [], protectedRoutes: [createApiServerRouter(deps)], operationalRoutes: [] });
  const counted: RequestListener = (req, res) => {
    side.expressHits++;
    app(req, res);
  };
  const listener = options.fast
    ? withFastPath({
        routes: [],
        directRoutes: [chatCompletionsRoute(deps, protectedAccess(keyCheck, rules))],
        hostAllowed: options.apiKey === null ? (req) => hostAllowed(req, rules) : undefined,
        logger: silentLogger,
        fallback: counted,
      })
    : counted;
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const side: ApiSide = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    expressHits: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return side;
}

interface Sent {
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

const authorized = (extra: Record<string, string> = {}): Record<string, string> => ({
  "content-type": "application/json",
  authorization: `Bearer ${API_KEY}`,
  ...extra,
});

const chat = (text: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }], ...extra });

/** A PNG (by its signature) of `size` bytes, as a data URL. */
function pngDataUrl(size: number): string {
  const bytes = Buffer.alloc(size, 3);
  Buffer.from("89504e470d0a1a0a", "hex").copy(bytes);
  return `data:image/png;base64,${bytes.toString("base64")}`;
}

/** The answer without what differs between two recorded requests (the completion id, its time). */
function comparable(res: RawResponse): ReturnType<typeof answerOf> & { json: unknown } {
  let json: unknown;
  try {
    const parsed = JSON.parse(res.body) as Record<string, unknown>;
    const { id: _id, created: _created, ...rest } = parsed;
    json = rest;
  } catch {
    json = res.body;
  }
  return { ...answerOf(res), body: "", contentLength: undefined, json };
}

let gw: TestGateway;
let deps: ApiServerDeps;
let express: ApiSide;
let fast: ApiSide;

beforeAll(async () => {
  gw = await startTestGateway({ http: false, workers: true, env: { BODY_LIMIT_BYTES: String(LIMIT), MEDIA_MAX_MESSAGE_BYTES: "8192", MEDIA_MAX_IMAGE_BYTES: "8192" } });
  const { ingress, events, store, config } = gw.gateway;
  deps = { ingress, events, store, config, logger: silentLogger };
  express = await serveApi(deps, { fast: false, apiKey: API_KEY });
  fast = await serveApi(deps, { fast: true, apiKey: API_KEY });
}, 60_000);

afterAll(async () => {
  await express?.close();
  await fast?.close();
  await gw?.stop();
});

async function both(sent: Sent): Promise<[RawResponse, RawResponse]> {
  const req = { method: "POST", path: sent.path ?? PATH, headers: sent.headers, body: sent.body };
  return [await rawRequest(express.url, req), await rawRequest(fast.url, req)];
}

/** Sends to both and checks the fast side answered without express; returns both answers. */
async function bothWithoutExpress(sent: Sent): Promise<[RawResponse, RawResponse]> {
  const before = fast.expressHits;
  const answers = await both(sent);
  expect(fast.expressHits).toBe(before);
  return answers;
}

describe("POST /v1/chat/completions: the fast path answers as the express route", () => {
  it("answers a completion with the same reply and headers, without express", async () => {
    const [viaExpress, viaFast] = await bothWithoutExpress({ headers: authorized(), body: chat("hello there") });
    expect(viaExpress.status).toBe(200);
    expect(comparable(viaFast)).toEqual(comparable(viaExpress));
    expect(JSON.parse(viaFast.body).choices[0].message.content).toContain("hello there");
    expect(viaFast.headers["x-session-id"]).toMatch(/^api-/);
    expect(viaFast.headers["content-length"]).toBe(String(Buffer.byteLength(viaFast.body)));
  });

  it("keeps an addressed session's transcript, and a retried Idempotency-Key gets the first answer byte for byte", async () => {
    const headers = authorized({ "x-session-id": "fast-path-session", "idempotency-key": "retry-1" });
    const first = await rawRequest(fast.url, { method: "POST", path: PATH, headers, body: chat("first words") });
    const again = await rawRequest(express.url, { method: "POST", path: PATH, headers, body: chat("first words") });
    expect(first.status).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers["x-session-id"]).toBe("fast-path-session");
    const rows = await gw.gateway.store.getMessages(await gw.gateway.store.conversationIdOf("fast-path-session"));
    expect(rows.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["first words"]);
  });

  it("streams a completion as server-sent events, without express", async () => {
    const [viaExpress, viaFast] = await bothWithoutExpress({ headers: authorized(), body: chat("stream me", { stream: true }) });
    for (const res of [viaExpress, viaFast]) {
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
      expect(res.body.trimEnd().endsWith("data: [DONE]")).toBe(true);
      const text = res.body
        .split("\n\n")
        .filter((line) => line.startsWith("data: {"))
        .map((line) => (JSON.parse(line.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
        .join("");
      expect(text).toContain("stream me");
    }
  });

  it("refuses a missing and a wrong key (401) with the same JSON error and WWW-Authenticate, recording nothing", async () => {
    const before = await gw.gateway.store.inboxCounts();
    for (const headers of [{ "content-type": "application/json" }, authorized({ authorization: "Bearer wrong" })]) {
      const [viaExpress, viaFast] = await bothWithoutExpress({ headers, body: chat("no key") });
      expect(viaExpress.status).toBe(401);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
      expect(viaFast.headers["www-authenticate"]).toBe(viaExpress.headers["www-authenticate"]);
    }
    expect(await gw.gateway.store.inboxCounts()).toEqual(before);
  });

  it("refuses a foreign Origin (403) whatever key it carries", async () => {
    const [viaExpress, viaFast] = await bothWithoutExpress({ headers: authorized({ origin: "https://evil.example" }), body: chat("csrf") });
    expect(viaExpress.status).toBe(403);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
  });

  it("answers malformed JSON, JSON that is no object and bodies without the required fields 400", async () => {
    const bodies = ["{not json", '"a string"', "  7", "[1, 2]", "null", '{"model":"echo"}', '{"model":"echo","messages":[{"role":"assistant","content":"hi"}]}', ""];
    for (const body of bodies) {
      const [viaExpress, viaFast] = await bothWithoutExpress({ headers: authorized(), body });
      expect(viaExpress.status, body).toBe(400);
      expect(answerOf(viaFast), body).toEqual(answerOf(viaExpress));
    }
  });

  it("reads a body with a byte-order mark, a charset parameter, and chunks, as the body parser does", async () => {
    const cases: Sent[] = [
      { headers: authorized(), body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(chat("with a mark"))]) },
      { headers: authorized({ "content-type": "application/json; charset=UTF-8" }), body: chat("with a charset") },
    ];
    for (const sent of cases) {
      const [viaExpress, viaFast] = await bothWithoutExpress(sent);
      expect(viaExpress.status).toBe(200);
      expect(comparable(viaFast)).toEqual(comparable(viaExpress));
    }
    const chunks = [chat("in chunks").slice(0, 20), chat("in chunks").slice(20)];
    const before = fast.expressHits;
    const viaFast = await chunkedRequest(fast.url, PATH, authorized(), chunks);
    const viaExpress = await chunkedRequest(express.url, PATH, authorized(), chunks);
    expect(fast.expressHits).toBe(before);
    expect(comparable(viaFast)).toEqual(comparable(viaExpress));
  });

  it("answers a bad X-Session-Id and Idempotency-Key 400", async () => {
    const badHeaders: Array<Record<string, string>> = [{ "x-session-id": "no spaces allowed" }, { "idempotency-key": "x".repeat(300) }];
    for (const extra of badHeaders) {
      const [viaExpress, viaFast] = await bothWithoutExpress({ headers: authorized(extra), body: chat("bad header") });
      expect(viaExpress.status).toBe(400);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    }
  });

  it("keeps the body limit: inline images have room, other text does not (413), declared or chunked", async () => {
    const picture = pngDataUrl(3000); // 4000 base64 characters: with the text, over LIMIT
    const withImage = JSON.stringify({
      model: "echo",
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: picture } }] }],
    });
    expect(withImage.length).toBeGreaterThan(LIMIT);
    const [imageExpress, imageFast] = await bothWithoutExpress({ headers: authorized(), body: withImage });
    expect(imageExpress.status).toBe(200);
    expect(comparable(imageFast)).toEqual(comparable(imageExpress));

    const wordy = chat("w".repeat(LIMIT));
    const [wordyExpress, wordyFast] = await bothWithoutExpress({ headers: authorized(), body: wordy });
    expect(wordyExpress.status).toBe(413);
    expect(answerOf(wordyFast)).toEqual(answerOf(wordyExpress));

    const overParser = chat("w".repeat(parserLimitBytes(gw.gateway.config)));
    const [overExpress, overFast] = await bothWithoutExpress({ headers: authorized(), body: overParser });
    expect(overExpress.status).toBe(413);
    expect(answerOf(overFast)).toEqual(answerOf(overExpress));
    const chunks = [overParser.slice(0, 1000), overParser.slice(1000)];
    const chunkedFast = await chunkedRequest(fast.url, PATH, authorized(), chunks);
    const chunkedExpress = await chunkedRequest(express.url, PATH, authorized(), chunks);
    expect(chunkedFast.status).toBe(413);
    expect(answerOf(chunkedFast)).toEqual(answerOf(chunkedExpress));
  });

  it("leaves other media types, charsets, encodings, spellings and methods to express, which answers them as before", async () => {
    const cases: Sent[] = [
      { headers: authorized({ "content-type": "text/plain" }), body: chat("plain") },
      { headers: authorized({ "content-type": "application/json; charset=utf-16" }), body: chat("utf16") },
      { headers: authorized({ "content-type": "application/json; charset=latin1" }), body: chat("latin1") },
      { headers: { authorization: `Bearer ${API_KEY}` }, body: chat("no type") },
      { headers: authorized({ "content-encoding": "gzip" }), body: chat("not really gzip") },
      { path: `${PATH}/`, headers: authorized(), body: chat("trailing slash") },
    ];
    for (const sent of cases) {
      const before = fast.expressHits;
      const [viaExpress, viaFast] = await both(sent);
      expect(fast.expressHits, JSON.stringify(sent.headers)).toBe(before + 1);
      expect(comparable(viaFast)).toEqual(comparable(viaExpress));
    }
    const get = await rawRequest(fast.url, { method: "GET", path: "/v1/models", headers: authorized() });
    expect(get.status).toBe(200);
  });

  it("counts wrong keys per address like express, then answers 429 with Retry-After", async () => {
    const keyed = await serveApi(deps, { fast: true, apiKey: API_KEY });
    try {
      let last: RawResponse | null = null;
      for (let i = 0; i < 40 && last?.status !== 429; i++) {
        last = await rawRequest(keyed.url, { method: "POST", path: PATH, headers: authorized({ authorization: `Bearer wrong-${i}` }), body: chat("guess") });
      }
      expect(last?.status).toBe(429);
      expect(JSON.parse(last?.body ?? "{}").error.code).toBe("too_many_failed_keys");
      expect(Number(last?.headers["retry-after"])).toBeGreaterThan(0);
      // Limited, even the right key gets no answer about itself.
      const right = await rawRequest(keyed.url, { method: "POST", path: PATH, headers: authorized(), body: chat("right") });
      expect(right.status).toBe(429);
      expect(keyed.expressHits).toBe(0);
    } finally {
      await keyed.close();
    }
  });
});

describe("POST /v1/chat/completions on a gateway without a key: the Host rule first, as in express", () => {
  it("answers a foreign Host 421 before reading the body, and a loopback one", async () => {
    const open = { express: await serveApi(deps, { fast: false, apiKey: null }), fast: await serveApi(deps, { fast: true, apiKey: null }) };
    try {
      const req = { method: "POST", path: PATH, headers: { "content-type": "application/json", host: "rebound.example" }, body: chat("rebinding") };
      const [viaExpress, viaFast] = [await rawRequest(open.express.url, req), await rawRequest(open.fast.url, req)];
      expect(viaExpress.status).toBe(421);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
      const local = await rawRequest(open.fast.url, { ...req, headers: { "content-type": "application/json" } });
      expect(local.status).toBe(200);
      expect(open.fast.expressHits).toBe(0);
    } finally {
      await open.express.close();
      await open.fast.close();
    }
  });
});

describe("a running gateway serves POST /v1/chat/completions on the fast path", () => {
  let running: TestGateway;

  beforeAll(async () => {
    running = await startTestGateway({ workers: true, env: { SWITCHBOARD_API_KEY: API_KEY } });
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
  });

  it("answers there, not in express: express puts an ETag on its errors, the fast path does not", async () => {
    const base = running.gateway.url as string;
    const answered = await rawRequest(base, { method: "POST", path: PATH, headers: authorized(), body: chat("fast") });
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body).choices[0].message.content).toContain("fast");
    const wrongKey = authorized({ authorization: "Bearer nope" });
    const viaFast = await rawRequest(base, { method: "POST", path: PATH, headers: wrongKey, body: chat("x") });
    const viaExpress = await rawRequest(base, { method: "POST", path: `${PATH}/`, headers: wrongKey, body: chat("x") });
    expect(viaFast.status).toBe(401);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(viaExpress.headers.etag).toBeDefined();
    expect(viaFast.headers.etag).toBeUndefined();
  });
});
