// The HTTP fast path for POST /webhooks/<route> answers exactly as the express route does. Each
// case goes to two real servers on loopback built from the same adapter: express alone, and the
// fast path in front of express (counting what reaches express), with real signatures; then a
// running gateway shows its server is wired that way.
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createWebhookAdapter, githubSignature, signWebhook, type WebhookRoutes } from "../../src/adapters/webhook/index.js";
import { silentLogger } from "../adapters/support/http.js";
import { RecordingIngress } from "../adapters/support/recording-ingress.js";
import { rawRequest, type RawResponse } from "../bad-input/raw-http.js";
import { answerOf, chunkedRequest, closePair, sendToBoth, servePair, serveSide, type SameRequest, type Side } from "./support/side-by-side.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";

const GITHUB_SECRET = "fast-path-webhook-secret";
const STANDARD_SECRET = "whsec_ZmFzdC1wYXRoLXN0YW5kYXJkLXdlYmhvb2s=";
const LIMIT = 4096;
const API_KEY = "fast-path-api-key-0123456789";
// Nothing listens there: no case runs a turn, so no callback is sent.
const CALLBACK_URL = "http://127.0.0.1:9/callback";

const ROUTES: WebhookRoutes = {
  ci: { secret: GITHUB_SECRET, style: "github", reply: "callback", callback_url: CALLBACK_URL },
  alerts: { secret: STANDARD_SECRET, style: "standard", reply: "callback", callback_url: CALLBACK_URL },
  ask: { secret: GITHUB_SECRET, style: "github", reply: "sync", sync_timeout_ms: 100 },
};

/** The webhook adapter's routes in the gateway's express app, with or without the fast path in front. */
async function serve(options: { fast: boolean; apiKey: string | null }): Promise<Side> {
  const adapter = createWebhookAdapter(ROUTES, { logger: silentLogger, bodyLimitBytes: LIMIT });
  return serveSide({ routes: (i) => adapter.routes!(i), plainRoutes: (i) => adapter.plainRoutes!(i) }, new RecordingIngress(), options);
}

function message(text: string, id?: string): string {
  return JSON.stringify({ ...(id ? { id } : {}), chat_id: "room-1", user_id: "u-7", text });
}

/** GitHub-style signature headers for `body` (a delivery id the signature does not cover). */
function github(body: string | Buffer, secret = GITHUB_SECRET): Record<string, string> {
  return { "content-type": "application/json", "x-hub-signature-256": githubSignature(secret, body), "x-github-delivery": "d-1" };
}

/** A valid message body of exactly `bytes` bytes. */
function paddedMessage(bytes: number, id: string): string {
  const empty = message("", id).length;
  return message("x".repeat(bytes - empty), id);
}

const SESSION = "sess-webhook:ci:room-1";

describe("POST /webhooks/<route>: the fast path answers as the express route", () => {
  let express: Side;
  let fast: Side;

  beforeEach(async () => {
    ({ express, fast } = await servePair(serve, null));
  });
  afterEach(() => closePair({ express, fast }));

  const both = (options: SameRequest): Promise<[RawResponse, RawResponse]> => sendToBoth({ express, fast }, "/webhooks/ci", options);

  it("records a signed delivery on a callback route once and answers 202 without express", async () => {
    const body = message("build finished", "gh-1");
    const [viaExpress, viaFast] = await both({ headers: github(body), body });
    expect(viaExpress.status).toBe(202);
    expect(JSON.parse(viaExpress.body)).toEqual({ accepted: true, session_id: SESSION });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    for (const side of [express, fast]) {
      expect(side.ingress.accepted.map((m) => [m.platformMessageId, m.replyTarget])).toEqual([
        ["ci:gh-1", { route: "ci", chat_id: "room-1", user_id: "u-7", in_reply_to: "gh-1" }],
      ]);
    }
    expect(fast.expressHits).toBe(0);
    expect(express.expressHits).toBe(1);
  });

  it("takes a Standard Webhooks delivery, its id from the signed webhook-id header", async () => {
    const body = message("disk full");
    const headers = { "content-type": "application/json", ...signWebhook("standard", STANDARD_SECRET, body, { id: "msg_1" }) };
    const [viaExpress, viaFast] = await both({ path: "/webhooks/alerts", headers, body });
    expect(viaExpress.status).toBe(202);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["alerts:msg_1"]);
    expect(fast.expressHits).toBe(0);
  });

  it("answers a duplicate delivery 200 {duplicate: true}, recording the message once; a query string is ignored", async () => {
    const body = message("build finished", "gh-dup");
    for (const path of ["/webhooks/ci", "/webhooks/ci?attempt=2"]) await both({ path, headers: github(body), body });
    const [viaExpress, viaFast] = await both({ headers: github(body), body });
    expect(viaExpress.status).toBe(200);
    expect(JSON.parse(viaExpress.body)).toEqual({ duplicate: true });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    // Without an id, the same bytes are the same message.
    const anonymous = message("no id");
    await both({ headers: github(anonymous), body: anonymous });
    const [againExpress, againFast] = await both({ headers: github(anonymous), body: anonymous });
    expect(JSON.parse(againExpress.body)).toEqual({ duplicate: true });
    expect(answerOf(againFast)).toEqual(answerOf(againExpress));
    for (const side of [express, fast]) {
      expect(side.ingress.accepted).toHaveLength(2);
      expect(side.ingress.duplicates).toHaveLength(3);
    }
    expect(fast.expressHits).toBe(0);
  });

  it("refuses a bad, a missing and a stale signature (401) with the same JSON error, recording nothing", async () => {
    const body = message("hi", "gh-2");
    const standardHeaders = signWebhook("standard", STANDARD_SECRET, body, { id: "msg_2", nowMs: Date.now() - 10 * 60_000 });
    const cases = [
      { headers: github(body, "another-secret"), body },
      { headers: { "content-type": "application/json" }, body },
      { headers: github(message("other")), body },
      { path: "/webhooks/alerts", headers: { "content-type": "application/json" }, body },
      { path: "/webhooks/alerts", headers: { "content-type": "application/json", ...standardHeaders }, body },
    ];
    for (const request of cases) {
      const [viaExpress, viaFast] = await both(request);
      expect(viaExpress.status).toBe(401);
      expect(viaExpress.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    }
    const [, missing] = await both(cases[1]);
    expect(JSON.parse(missing.body)).toEqual({ error: { message: "missing X-Hub-Signature-256 header", type: "authentication_error", code: "invalid_signature" } });
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
  });

  it("answers malformed JSON and bodies without the required fields 400", async () => {
    for (const body of ['{"chat_id":', "[]", "null", '{"chat_id":"c","user_id":"u"}', '{"chat_id":"c","user_id":"u","text":"  "}', ""]) {
      const [viaExpress, viaFast] = await both({ headers: github(body), body });
      expect(viaExpress.status, body).toBe(400);
      expect(answerOf(viaFast), body).toEqual(answerOf(viaExpress));
    }
    const [, malformed] = await both({ headers: github("{"), body: "{" });
    expect(JSON.parse(malformed.body).error).toEqual({ message: "body is not valid JSON", type: "invalid_request_error", code: "invalid_body" });
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
  });

  it("answers 503 when the message cannot be recorded", async () => {
    express.ingress.failWith = new Error("store down");
    fast.ingress.failWith = new Error("store down");
    const body = message("hi", "gh-3");
    const [viaExpress, viaFast] = await both({ headers: github(body), body });
    expect(viaExpress.status).toBe(503);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.expressHits).toBe(0);
  });

  it("answers a sync route with the reply, and 504 naming the session when none comes in time", async () => {
    const body = message("what time is it", "gh-4");
    const [viaExpress, viaFast] = await both({ path: "/webhooks/ask", headers: github(body), body });
    expect(viaExpress.status).toBe(200);
    expect(JSON.parse(viaExpress.body)).toEqual({ reply: "echo: what time is it", session_id: "sess-webhook:ask:room-1" });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));

    express.ingress.reply = null;
    fast.ingress.reply = null;
    const late = message("too slow", "gh-5");
    const [lateExpress, lateFast] = await both({ path: "/webhooks/ask", headers: github(late), body: late });
    expect(lateExpress.status).toBe(504);
    expect(JSON.parse(lateExpress.body)).toEqual({
      error: { message: "no reply within 100 ms; the message is still being processed", type: "server_error", code: "reply_timeout" },
      session_id: "sess-webhook:ask:room-1",
    });
    expect(answerOf(lateFast)).toEqual(answerOf(lateExpress));
    expect(fast.expressHits).toBe(0);
  });

  it("takes a body of exactly the limit and refuses one byte more (413), declared or chunked", async () => {
    const atLimit = paddedMessage(LIMIT, "gh-limit");
    expect(Buffer.byteLength(atLimit)).toBe(LIMIT);
    const [okExpress, okFast] = await both({ headers: github(atLimit), body: atLimit });
    expect(okExpress.status).toBe(202);
    expect(answerOf(okFast)).toEqual(answerOf(okExpress));

    const over = paddedMessage(LIMIT + 1, "gh-over");
    const [viaExpress, viaFast] = await both({ headers: github(over), body: over });
    expect(viaExpress.status).toBe(413);
    expect(JSON.parse(viaExpress.body)).toEqual({ error: { message: "request body is larger than the configured limit", type: "request_too_large", code: "body_too_large" } });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));

    const chunks = [over.slice(0, 1000), over.slice(1000, 3000), over.slice(3000)];
    const chunkedExpress = await chunkedRequest(express.url, "/webhooks/ci", github(over), chunks);
    const chunkedFast = await chunkedRequest(fast.url, "/webhooks/ci", github(over), chunks);
    expect(chunkedExpress.status).toBe(413);
    expect(answerOf(chunkedFast)).toEqual(answerOf(chunkedExpress));
    expect(fast.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["ci:gh-limit"]);
    expect(fast.expressHits).toBe(0);
  });

  it("answers a Host a no-key gateway does not serve as express does (421), recording nothing", async () => {
    const body = message("hi", "gh-6");
    const [viaExpress, viaFast] = await both({ headers: { ...github(body), host: "rebound.example:8080" }, body });
    expect(viaExpress.status).toBe(421);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
    const [listedExpress, listedFast] = await both({ headers: { ...github(body), host: "localhost:8080" }, body });
    expect(listedExpress.status).toBe(202);
    expect(answerOf(listedFast)).toEqual(answerOf(listedExpress));
  });

  it("leaves an unknown route name, other spellings and other methods to express", async () => {
    const body = message("hi", "gh-7");
    const cases = [
      { method: "POST", path: "/webhooks/nope", headers: github(body), body },
      { method: "POST", path: "/webhooks/toString", headers: github(body), body },
      { method: "GET", path: "/webhooks/ci" },
      { method: "PUT", path: "/webhooks/ci", headers: github(body), body },
      { method: "POST", path: "/webhooks", headers: github(body), body },
      // express matches these to the same route; the fast path claims the exact path only.
      { method: "POST", path: "/webhooks/ci/", headers: github(body), body },
      { method: "POST", path: "/WEBHOOKS/ci", headers: github(body), body },
      { method: "POST", path: "/webhooks/%63i", headers: github(body), body },
    ];
    for (const [index, request] of cases.entries()) {
      const [viaExpress, viaFast] = await both(request);
      expect(answerOf(viaFast), `${request.method} ${request.path}`).toEqual(answerOf(viaExpress));
      expect(fast.expressHits, `${request.method} ${request.path}`).toBe(index + 1);
    }
    const [, unknown] = await both(cases[0]);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({ error: { message: "unknown webhook route 'nope'", type: "not_found_error", code: "unknown_route" } });
  });

  it("leaves a compressed body to express's body parser, which inflates it before the signature check", async () => {
    const body = message("zipped", "gh-8");
    const [viaExpress, viaFast] = await both({ headers: { ...github(body), "content-encoding": "gzip" }, body: gzipSync(body) });
    expect(viaExpress.status).toBe(202);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.accepted).toHaveLength(1);
    expect(fast.expressHits).toBe(1);
  });
});

describe("POST /webhooks/<route> on a gateway with a key: no Host rule, as in express", () => {
  it("answers any host name", async () => {
    const sides = await servePair(serve, API_KEY);
    try {
      const body = message("hi", "gh-9");
      const [viaExpress, viaFast] = await sendToBoth(sides, "/webhooks/ci", { headers: { ...github(body), host: "bot.example.com" }, body });
      expect(viaExpress.status).toBe(202);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
      expect(sides.fast.ingress.accepted).toHaveLength(1);
      expect(sides.fast.expressHits).toBe(0);
    } finally {
      await closePair(sides);
    }
  });
});

describe("a running gateway with webhook routes serves them on the fast path", () => {
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({ workers: false, env: { BODY_LIMIT_BYTES: String(LIMIT) }, overrides: { webhooks: ROUTES } });
    base = gw.gateway.url as string;
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
  });

  it("records a signed delivery after one inbox row; express answers the same route only under another spelling", async () => {
    const body = message("build finished", "gw-1");
    const accepted = await rawRequest(base, { method: "POST", path: "/webhooks/ci", headers: github(body), body });
    expect(accepted.status).toBe(202);
    expect(JSON.parse(accepted.body)).toEqual({ accepted: true, session_id: expect.any(String) });
    expect((await gw.gateway.store.inboxCounts()).pending).toBe(1);

    // express puts a weak ETag on every JSON body it sends; the fast path does not. The same
    // duplicate delivery with a trailing slash (express's route, not the exact path) has one.
    const fastAnswer = await rawRequest(base, { method: "POST", path: "/webhooks/ci", headers: github(body), body });
    const expressAnswer = await rawRequest(base, { method: "POST", path: "/webhooks/ci/", headers: github(body), body });
    expect(JSON.parse(fastAnswer.body)).toEqual({ duplicate: true });
    expect(answerOf(fastAnswer)).toEqual(answerOf(expressAnswer));
    expect(expressAnswer.headers.etag).toBeDefined();
    expect(fastAnswer.headers.etag).toBeUndefined();
    expect((await gw.gateway.store.inboxCounts()).pending).toBe(1);

    const over = paddedMessage(LIMIT + 1, "gw-over");
    const tooLarge = await rawRequest(base, { method: "POST", path: "/webhooks/ci", headers: github(over), body: over });
    expect(tooLarge.status).toBe(413);
    const foreign = await rawRequest(base, { method: "POST", path: "/webhooks/ci", headers: { ...github(body), host: "rebound.example" }, body });
    expect(foreign.status).toBe(421);
  });
});
