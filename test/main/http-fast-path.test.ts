// The HTTP fast path for POST /slack/events answers exactly as the express route does. Each case
// goes to two real servers on loopback built from the same adapter: express alone, and the fast
// path in front of express (counting what reaches express), with real signatures; then a running
// gateway shows its server is wired that way.
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSlackAdapter } from "../../src/adapters/slack/index.js";
import { slackSignature } from "../../src/adapters/slack/signature.js";
import { InMemoryThreadMemory } from "../../src/bus/thread-memory.js";
import { fixtureText } from "../adapters/support/fixtures.js";
import { silentLogger } from "../adapters/support/http.js";
import { RecordingIngress } from "../adapters/support/recording-ingress.js";
import { rawRequest, type RawResponse } from "../bad-input/raw-http.js";
import { answerOf, chunkedRequest, closePair, sendToBoth, servePair, serveSide, type SameRequest, type Side } from "./support/side-by-side.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";

const SECRET = "fast-path-slack-signing-secret";
const LIMIT = 4096;
const API_KEY = "fast-path-api-key-0123456789";

/** The Slack adapter's routes in the gateway's express app, with or without the fast path in front. */
async function serve(options: { fast: boolean; apiKey: string | null }): Promise<Side> {
  const adapter = createSlackAdapter(
    // Nothing listens there: no case gets as far as calling Slack.
    { signingSecret: SECRET, botToken: "xoxb-fast-path", apiUrl: "http://127.0.0.1:9/api/", botUserId: "U0BOT000001" },
    { logger: silentLogger, bodyLimitBytes: LIMIT, threads: new InMemoryThreadMemory() },
  );
  return serveSide({ routes: (i) => adapter.routes!(i), plainRoutes: (i) => adapter.plainRoutes!(i) }, new RecordingIngress(), options);
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function signed(body: string, timestamp = String(nowSeconds()), secret = SECRET): Record<string, string> {
  return { "content-type": "application/json", "x-slack-request-timestamp": timestamp, "x-slack-signature": slackSignature(secret, timestamp, body) };
}

/** A signed-able JSON envelope of exactly `bytes` bytes (a type the route acknowledges without recording). */
function paddedEnvelope(bytes: number): string {
  const empty = JSON.stringify({ type: "app_rate_limited", pad: "" });
  return JSON.stringify({ type: "app_rate_limited", pad: "x".repeat(bytes - empty.length) });
}

const mention = fixtureText("slack", "app_mention.json");

describe("POST /slack/events: the fast path answers as the express route", () => {
  let express: Side;
  let fast: Side;

  beforeEach(async () => {
    ({ express, fast } = await servePair(serve, null));
  });
  afterEach(() => closePair({ express, fast }));

  const both = (options: SameRequest): Promise<[RawResponse, RawResponse]> => sendToBoth({ express, fast }, "/slack/events", options);

  it("records a valid event_callback and answers 200 without express", async () => {
    const [viaExpress, viaFast] = await both({ headers: signed(mention), body: mention });
    expect(viaExpress.status).toBe(200);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    for (const side of [express, fast]) {
      expect(side.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["Ev0MENTION0001"]);
    }
    expect(fast.expressHits).toBe(0);
    expect(express.expressHits).toBe(1);
  });

  it("keeps the connection usable: several events on one keep-alive connection, a query string ignored", async () => {
    for (const path of ["/slack/events", "/slack/events?source=retry"]) {
      const res = await fetch(`${fast.url}${path}`, { method: "POST", headers: signed(mention), body: mention });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
    expect(fast.ingress.accepted).toHaveLength(1);
    expect(fast.ingress.duplicates).toHaveLength(1);
    expect(fast.expressHits).toBe(0);
  });

  it("refuses a bad signature (401) with the same JSON error, recording nothing", async () => {
    const [viaExpress, viaFast] = await both({ headers: signed(mention, undefined, "another-secret"), body: mention });
    expect(viaExpress.status).toBe(401);
    expect(viaExpress.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(viaExpress.body)).toEqual({ error: { message: "Slack signature does not match", type: "authentication_error", code: "invalid_signature" } });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
  });

  it("refuses a request without signature headers and a stale timestamp (401)", async () => {
    const cases = [
      { headers: { "content-type": "application/json" }, body: mention },
      { headers: signed(mention, String(nowSeconds() - 301)), body: mention },
      { headers: signed(mention, "not-a-number"), body: mention },
    ];
    for (const request of cases) {
      const [viaExpress, viaFast] = await both(request);
      expect(viaExpress.status).toBe(401);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    }
    expect(JSON.parse((await both(cases[1]))[1].body).error.message).toBe("Slack request timestamp is outside the allowed window");
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
  });

  it("answers malformed JSON and payloads that are no Slack envelope 400", async () => {
    for (const body of ['{"type":', "[]", '{"token":"x"}', '{"type":"url_verification"}', ""]) {
      const [viaExpress, viaFast] = await both({ headers: signed(body), body });
      expect(viaExpress.status, body).toBe(400);
      expect(answerOf(viaFast), body).toEqual(answerOf(viaExpress));
    }
    expect(fast.expressHits).toBe(0);
  });

  it("answers url_verification with the challenge", async () => {
    const body = fixtureText("slack", "url_verification.json");
    const [viaExpress, viaFast] = await both({ headers: signed(body), body });
    expect(viaExpress.status).toBe(200);
    expect(JSON.parse(viaExpress.body)).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.expressHits).toBe(0);
  });

  it("acknowledges other envelope types with an empty 200", async () => {
    const body = paddedEnvelope(100);
    const [viaExpress, viaFast] = await both({ headers: signed(body), body });
    expect(viaExpress.status).toBe(200);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
  });

  it("answers 503 when the message cannot be recorded, so Slack delivers it again", async () => {
    express.ingress.failWith = new Error("store down");
    fast.ingress.failWith = new Error("store down");
    const [viaExpress, viaFast] = await both({ headers: signed(mention), body: mention });
    expect(viaExpress.status).toBe(503);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.expressHits).toBe(0);
  });

  it("takes a body of exactly the limit and refuses one byte more (413), declared or chunked", async () => {
    const atLimit = paddedEnvelope(LIMIT);
    const [okExpress, okFast] = await both({ headers: signed(atLimit), body: atLimit });
    expect(okExpress.status).toBe(200);
    expect(answerOf(okFast)).toEqual(answerOf(okExpress));

    const over = paddedEnvelope(LIMIT + 1);
    const [viaExpress, viaFast] = await both({ headers: signed(over), body: over });
    expect(viaExpress.status).toBe(413);
    expect(JSON.parse(viaExpress.body)).toEqual({ error: { message: "request body is larger than the configured limit", type: "request_too_large", code: "body_too_large" } });
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));

    const chunks = [over.slice(0, 1000), over.slice(1000, 3000), over.slice(3000)];
    const chunkedExpress = await chunkedRequest(express.url, "/slack/events", signed(over), chunks);
    const chunkedFast = await chunkedRequest(fast.url, "/slack/events", signed(over), chunks);
    expect(chunkedExpress.status).toBe(413);
    expect(answerOf(chunkedFast)).toEqual(answerOf(chunkedExpress));
    expect(fast.expressHits).toBe(0);
  });

  it("answers a Host a no-key gateway does not serve as express does (421), before reading the body", async () => {
    const [viaExpress, viaFast] = await both({ headers: { ...signed(mention), host: "rebound.example:8080" }, body: mention });
    expect(viaExpress.status).toBe(421);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.calls).toHaveLength(0);
    expect(fast.expressHits).toBe(0);
    const [listedExpress, listedFast] = await both({ headers: { ...signed(mention), host: "localhost:8080" }, body: mention });
    expect(listedExpress.status).toBe(200);
    expect(answerOf(listedFast)).toEqual(answerOf(listedExpress));
  });

  it("leaves every other method and path to express, untouched", async () => {
    const cases = [
      { method: "GET", path: "/slack/events" },
      { method: "PUT", path: "/slack/events", headers: signed(mention), body: mention },
      // express matches these to the same route; the fast path claims the exact path only.
      { method: "POST", path: "/slack/events/", headers: signed(mention), body: mention },
      { method: "POST", path: "/SLACK/EVENTS", headers: signed(mention), body: mention },
      { method: "POST", path: "/slack/commands", headers: signed("command=%2Fask&text=hi"), body: "command=%2Fask&text=hi" },
      { method: "POST", path: "/slack/events-not", headers: signed(mention), body: mention },
      { method: "GET", path: "/health" },
    ];
    for (const [index, request] of cases.entries()) {
      const [viaExpress, viaFast] = await both(request);
      expect(answerOf(viaFast), `${request.method} ${request.path}`).toEqual(answerOf(viaExpress));
      expect(fast.expressHits, `${request.method} ${request.path}`).toBe(index + 1);
    }
  });

  it("leaves a compressed body to express's body parser, which inflates it before the signature check", async () => {
    const body = gzipSync(mention);
    const [viaExpress, viaFast] = await both({ headers: { ...signed(mention), "content-encoding": "gzip" }, body });
    expect(viaExpress.status).toBe(200);
    expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
    expect(fast.ingress.accepted).toHaveLength(1);
    expect(fast.expressHits).toBe(1);
  });
});

describe("POST /slack/events on a gateway with a key: no Host rule, as in express", () => {
  it("answers any host name", async () => {
    const sides = await servePair(serve, API_KEY);
    try {
      const [viaExpress, viaFast] = await sendToBoth(sides, "/slack/events", { headers: { ...signed(mention), host: "bot.example.com" }, body: mention });
      expect(viaExpress.status).toBe(200);
      expect(answerOf(viaFast)).toEqual(answerOf(viaExpress));
      expect(sides.fast.ingress.accepted).toHaveLength(1);
      expect(sides.fast.expressHits).toBe(0);
    } finally {
      await closePair(sides);
    }
  });
});

describe("a running gateway with Slack's signing secret serves /slack/events on the fast path", () => {
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      workers: false,
      env: {
        SLACK_SIGNING_SECRET: SECRET,
        SLACK_BOT_TOKEN: "xoxb-fast-path",
        SLACK_BOT_USER_ID: "U0BOT000001",
        // Nothing listens there: no turn runs here (no workers), so nothing calls Slack.
        SLACK_API_URL: "http://127.0.0.1:9/api/",
        BODY_LIMIT_BYTES: String(LIMIT),
      },
    });
    base = gw.gateway.url as string;
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
  });

  it("records a signed event and answers the challenge; express answers the same route only under another spelling", async () => {
    const res = await rawRequest(base, { method: "POST", path: "/slack/events", headers: signed(mention), body: mention });
    expect(res.status).toBe(200);
    expect((await gw.gateway.store.inboxCounts()).pending).toBe(1);

    // express puts a weak ETag on every JSON body it sends; the fast path does not. The same
    // challenge with a trailing slash (express's route, not the fast path's exact path) has one.
    const body = fixtureText("slack", "url_verification.json");
    const fastAnswer = await rawRequest(base, { method: "POST", path: "/slack/events", headers: signed(body), body });
    const expressAnswer = await rawRequest(base, { method: "POST", path: "/slack/events/", headers: signed(body), body });
    expect(answerOf(fastAnswer)).toEqual(answerOf(expressAnswer));
    expect(JSON.parse(fastAnswer.body)).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    expect(expressAnswer.headers.etag).toBeDefined();
    expect(fastAnswer.headers.etag).toBeUndefined();

    const over = paddedEnvelope(LIMIT + 1);
    const tooLarge = await rawRequest(base, { method: "POST", path: "/slack/events", headers: signed(over), body: over });
    expect(tooLarge.status).toBe(413);
    const foreign = await rawRequest(base, { method: "POST", path: "/slack/events", headers: { ...signed(mention), host: "rebound.example" }, body: mention });
    expect(foreign.status).toBe(421);

    // The server's part of each ack the fast path gave (the event, the challenge; not the 413 the
    // platform guard gave from the declared length before the body was read, nor the Host refusal
    // nor express's answer) is timed in /metrics.
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const count = /^switchboard_http_ack_seconds_count\{route="\/slack\/events"\} (\d+)$/m.exec(metrics);
    expect(Number(count?.[1])).toBe(2);
    const sum = /^switchboard_http_ack_seconds_sum\{route="\/slack\/events"\} (\S+)$/m.exec(metrics);
    expect(Number(sum?.[1])).toBeGreaterThan(0);
  });
});
