// The bad-input corpus: every HTTP route and the WebSocket protocol get malformed, mistyped,
// oversized, forged, replayed and path-tricked input. Each case must get the right 4xx JSON error
// (or an error frame), must not enqueue anything, and the server must keep serving afterwards.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { httpCases } from "./http-cases.js";
import {
  API_KEY, configYaml, discordKeys, githubHeaders, SLACK_SECRET, TELEGRAM_SECRET, TELEGRAM_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_PHONE_NUMBER_ID, WHATSAPP_VERIFY_TOKEN,
} from "./keys.js";
import { rawRequest, upgradeStatus } from "./raw-http.js";
import { wsFrameCases, wsUpgradeCases } from "./ws-cases.js";

interface ErrorBody {
  error?: { message?: unknown; type?: unknown; code?: unknown };
}

function nextFrame(ws: WebSocket, timeoutMs = 3000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.off("message", onMessage);
      reject(new Error(`no frame within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (data: WebSocket.RawData): void => {
      clearTimeout(timer);
      ws.off("message", onMessage);
      resolve(JSON.parse(data.toString()) as Record<string, unknown>);
    };
    ws.on("message", onMessage);
  });
}

describe("the bad-input corpus", () => {
  const temp = makeTempDir("sb-bad-input");
  let gw: TestGateway;
  let base: string;
  let snapshot: unknown;

  /** Inbox rows of every status: a case that records (and so enqueues) a message adds one. */
  const inboxRows = async (): Promise<number> => Object.values(await gw.gateway.store.inboxCounts()).reduce((a, b) => a + b, 0);

  /** What must be the same after the whole corpus: the inbox (every status) and the turn queue. */
  const state = async (): Promise<unknown> => ({
    inbox: await gw.gateway.store.inboxCounts(),
    turns: await gw.gateway.queues.turns.getJobCounts("waiting", "active", "delayed", "prioritized", "waiting-children", "failed"),
  });

  // A good delivery, accepted before the corpus: its replay is one of the cases.
  const acceptedBody = JSON.stringify({ id: "corpus-accepted", chat_id: "corpus", user_id: "u1", text: "the accepted delivery" });

  beforeAll(async () => {
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, configYaml);
    gw = await startTestGateway({
      env: {
        SWITCHBOARD_API_KEY: API_KEY,
        SWITCHBOARD_CONFIG: config,
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_BOT_TOKEN: "xoxb-corpus",
        SLACK_BOT_USER_ID: "U0BOT",
        // Nothing listens there: the corpus never gets as far as calling Slack.
        SLACK_API_URL: "http://127.0.0.1:9/api/",
        DISCORD_PUBLIC_KEY: discordKeys.publicHex,
        TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        // Nothing listens there either: no case gets as far as asking Telegram who the bot is.
        TELEGRAM_API_URL: "http://127.0.0.1:9",
        WHATSAPP_ACCESS_TOKEN: "EAAcorpus",
        WHATSAPP_APP_SECRET,
        WHATSAPP_VERIFY_TOKEN,
        WHATSAPP_PHONE_NUMBER_ID,
        // Nothing listens there either.
        WHATSAPP_API_URL: "http://127.0.0.1:9/v21.0",
      },
      // Dozens of forged signatures from one address: each case must get its own 4xx, not the
      // 429 past the burst (platform-secrets.e2e.test.ts tests that one).
      platformAttemptLimits: { maxFailures: 10_000, windowMs: 60_000, maxAddresses: 10 },
    });
    base = gw.gateway.url as string;
    const first = await rawRequest(base, { method: "POST", path: "/webhooks/gh", headers: { "content-type": "application/json", ...githubHeaders(acceptedBody) }, body: acceptedBody });
    expect(first.status, first.body).toBe(200);
    await waitFor(async () => (await gw.gateway.store.inboxCounts()).pending === 0, 20_000, "the setup delivery answered");
    // Its job finishes a moment after the row is done: the snapshot must not catch it active.
    await waitFor(async () => (await gw.gateway.queues.turns.getActiveCount()) === 0, 20_000, "the setup job finished");
    snapshot = await state();
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    temp.cleanup();
  });

  describe("HTTP", () => {
    const cases = httpCases();

    it("has at least 50 cases over every route", () => {
      expect(cases.length).toBeGreaterThanOrEqual(50);
      for (const prefix of ["/v1/chat/completions", "/v1/models", "/api/sessions", "/slack/events", "/discord/interactions", "/telegram/webhook", "/webhooks/", "/whatsapp/webhook", "/health"]) {
        expect(cases.some((c) => c.path.startsWith(prefix)), prefix).toBe(true);
      }
    });

    it.each(cases)("$name -> $status", async (c) => {
      const rowsBefore = await inboxRows();
      const res = await rawRequest(base, { method: c.method, path: c.path, headers: c.headers, body: c.body });
      const expected = Array.isArray(c.status) ? c.status : [c.status];
      const what = `${c.method} ${c.path.slice(0, 120)} answered ${res.status} ${res.body.slice(0, 300)}`;
      expect(expected, what).toContain(res.status);
      expect(String(res.headers["content-type"]), what).toMatch(/^application\/json/);
      const body = JSON.parse(res.body) as ErrorBody;
      expect(typeof body.error?.message, what).toBe("string");
      expect(typeof body.error?.type, what).toBe("string");
      expect(typeof body.error?.code, what).toBe("string");
      expect(String(body.error?.message).length, what).toBeGreaterThan(0);
      expect(await inboxRows(), `${c.name}: a message was recorded`).toBe(rowsBefore);
    });

    it("answers a replay of an accepted webhook delivery as a duplicate, without a turn", async () => {
      const rowsBefore = await inboxRows();
      const res = await rawRequest(base, { method: "POST", path: "/webhooks/gh", headers: { "content-type": "application/json", ...githubHeaders(acceptedBody) }, body: acceptedBody });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ duplicate: true });
      expect(await inboxRows()).toBe(rowsBefore);
    });

    it("answers the same signed body under a new X-GitHub-Delivery as a duplicate (the header is not signed)", async () => {
      const rowsBefore = await inboxRows();
      for (const delivery of ["replay-1", "replay-2"]) {
        const res = await rawRequest(base, { method: "POST", path: "/webhooks/gh", headers: { "content-type": "application/json", ...githubHeaders(acceptedBody, delivery) }, body: acceptedBody });
        expect(res.status).toBe(200);
        expect(JSON.parse(res.body)).toEqual({ duplicate: true });
      }
      expect(await inboxRows()).toBe(rowsBefore);
    });

    it("leaves the inbox and the turn queue as they were", async () => {
      expect(await state()).toEqual(snapshot);
    });
  });

  describe("WebSocket", () => {
    let ws: WebSocket;

    beforeAll(async () => {
      ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws?token=${API_KEY}`);
      await new Promise<void>((resolve, reject) => {
        ws.once("open", () => resolve());
        ws.once("error", reject);
      });
    });

    afterAll(() => ws?.terminate());

    it.each(wsFrameCases)("frame: $name -> $code", async (c) => {
      const rowsBefore = await inboxRows();
      const reply = nextFrame(ws);
      ws.send(c.frame, { binary: c.binary === true });
      const frame = await reply;
      const what = `answered ${JSON.stringify(frame).slice(0, 300)}`;
      if (c.refusedAckAllowed && frame.type === "ack") {
        expect(frame.status, what).toBe("rejected");
      } else {
        expect(frame.type, what).toBe("error");
        if (c.code !== "refused") expect(frame.code, what).toBe(c.code);
        expect(typeof frame.message, what).toBe("string");
      }
      expect(ws.readyState, "the connection lives on").toBe(WebSocket.OPEN);
      expect(await inboxRows(), `${c.name}: a message was recorded`).toBe(rowsBefore);
    });

    it.each(wsUpgradeCases(API_KEY))("$name -> $status", async (c) => {
      const res = await upgradeStatus(base, c.path, c.headers);
      expect(res.status, res.body).toBe(c.status);
      const body = JSON.parse(res.body) as ErrorBody;
      expect(typeof body.error?.code, res.body).toBe("string");
    });
  });

  describe("a gateway without a key (loopback only)", () => {
    let open: TestGateway;
    let openBase: string;

    beforeAll(async () => {
      open = await startTestGateway({ workers: false });
      openBase = open.gateway.url as string;
    });

    afterAll(async () => {
      await open?.stop();
    });

    const foreignHosts = ["attacker.example", "attacker.example:80", "127.0.0.1.attacker.example", "localhost.attacker.example", "[::1"];
    const routes: Array<[string, string]> = [
      ["GET", "/api/sessions"],
      ["GET", "/api/sessions/some-session/messages"],
      ["GET", "/v1/models"],
      ["GET", "/health"],
      ["GET", "/"],
      ["GET", "/admin/queues"],
    ];

    it.each(routes.flatMap(([method, path]) => foreignHosts.map((host) => ({ method, path, host }))))(
      "$method $path with Host '$host' -> 421",
      async ({ method, path, host }) => {
        const res = await rawRequest(openBase, { method, path, headers: { host } });
        expect(res.status, res.body).toBe(421);
        expect(JSON.parse(res.body)).toMatchObject({ error: { code: "host_not_allowed" } });
      },
    );

    it.each(foreignHosts)("a /ws upgrade with Host '%s' -> 421", async (host) => {
      const res = await upgradeStatus(openBase, "/ws", { host });
      expect(res.status, res.body).toBe(421);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: "host_not_allowed" } });
    });

    it("a /ws upgrade from another site's page -> 403, and from none or its own origin -> 101", async () => {
      const port = new URL(openBase).port;
      expect((await upgradeStatus(openBase, "/ws", { origin: "https://evil.example" })).status).toBe(403);
      expect((await upgradeStatus(openBase, "/ws", { origin: `http://localhost:${port}`, host: `127.0.0.1:${port}` })).status).toBe(403);
      expect((await upgradeStatus(openBase, "/ws")).status).toBe(101);
      expect((await upgradeStatus(openBase, "/ws", { origin: `http://127.0.0.1:${port}` })).status).toBe(101);
      expect((await upgradeStatus(openBase, "/ws", { origin: `http://localhost:${port}`, host: `localhost:${port}` })).status).toBe(101);
    });

    it("a cross-site simple request cannot interrupt: text/plain -> 415, a foreign Origin -> 403", async () => {
      const path = "/api/sessions/any-session/interrupt";
      const plain = await rawRequest(openBase, { method: "POST", path, headers: { "content-type": "text/plain" }, body: '{"hard":true}' });
      expect(plain.status, plain.body).toBe(415);
      const foreign = await rawRequest(openBase, { method: "POST", path, headers: { "content-type": "application/json", origin: "https://evil.example" }, body: "{}" });
      expect(foreign.status, foreign.body).toBe(403);
    });

    it("answers loopback host names", async () => {
      const port = new URL(openBase).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `127.1.2.3:${port}`, "LOCALHOST"]) {
        const res = await rawRequest(openBase, { method: "GET", path: "/api/sessions", headers: { host } });
        expect(res.status, host).toBe(200);
      }
    });
  });

  it("keeps serving afterwards: a good API request, a WebSocket send and a subscribe all work", async () => {
    const rowsBefore = await inboxRows();

    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "still there after the corpus?" }] }),
    });
    expect(res.status).toBe(200);
    const completion = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(completion.choices[0].message.content).toContain("still there after the corpus?");

    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws`, { headers: { authorization: `Bearer ${API_KEY}` } });
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once("open", () => resolve());
        ws.once("error", reject);
      });
      const subscribed = nextFrame(ws);
      ws.send(JSON.stringify({ type: "subscribe", session_id: "corpus-after" }));
      expect(await subscribed).toMatchObject({ type: "subscribed", session_id: "corpus-after" });
      const ack = nextFrame(ws);
      ws.send(JSON.stringify({ type: "send", session_id: "corpus-after", text: "a good frame", client_message_id: "good-1" }));
      expect(await ack).toMatchObject({ type: "ack", status: "accepted", client_message_id: "good-1" });
    } finally {
      ws.terminate();
    }
    // Exactly the two good messages were recorded: the counting above would have seen any other.
    await waitFor(async () => (await inboxRows()) === rowsBefore + 2, 5000, "two new inbox rows");
  });
});
