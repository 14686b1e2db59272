// The browser rules against running gateways: what a page on another site, or a page reached
// through a rebound DNS name, can do to a gateway — nothing — in both modes, and what
// ALLOWED_HOSTS, ALLOWED_ORIGINS and TRUST_PROXY let through.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { rawRequest, upgradeStatus } from "../bad-input/raw-http.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";

const FOREIGN = "https://evil.example";

/** Opens a WebSocket; resolves with the upgrade's status (101 when it opened) and the socket. */
function connect(url: string, options: WebSocket.ClientOptions = {}): Promise<{ status: number; ws: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once("open", () => resolve({ status: 101, ws }));
    ws.once("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0, ws });
      res.resume();
    });
    ws.once("error", reject);
  });
}

function nextFrame(ws: WebSocket, timeoutMs = 5000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no frame within ${timeoutMs} ms`)), timeoutMs);
    ws.once("message", (data) => {
      clearTimeout(timer);
      resolve(JSON.parse(data.toString()) as Record<string, unknown>);
    });
  });
}

describe("a gateway without a key: another site's page gets nothing", () => {
  let gw: TestGateway;
  let base: string;
  let wsUrl: string;
  let sessionId: string;

  beforeAll(async () => {
    gw = await startTestGateway();
    base = gw.gateway.url as string;
    wsUrl = `${base.replace(/^http/, "ws")}/ws`;
    // A private conversation the page would like to read.
    sessionId = "private-conversation";
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": sessionId },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "my secret plans" }] }),
    });
    expect(res.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
  });

  it("refuses a WebSocket opened by a foreign page (403): no replay of the transcript, no turn", async () => {
    const { status, ws } = await connect(wsUrl, { origin: FOREIGN });
    ws.terminate();
    expect(status).toBe(403);
    // The same request from a client without Origin (not a browser) works, and sees the history.
    const own = await connect(wsUrl);
    try {
      expect(own.status).toBe(101);
      own.ws.send(JSON.stringify({ type: "subscribe", session_id: sessionId, since: "0-0" }));
      // The stored events come first, then the confirmation.
      const first = await nextFrame(own.ws);
      expect(first).toMatchObject({ type: "event", session_id: sessionId });
    } finally {
      own.ws.terminate();
    }
  });

  it("accepts the gateway's own page: Origin matching the Host it was loaded from", async () => {
    const port = new URL(base).port;
    const { status, ws } = await connect(wsUrl, { origin: `http://127.0.0.1:${port}` });
    ws.terminate();
    expect(status).toBe(101);
  });

  it("answers nothing under a rebound DNS name (421), on the API, /health and /ws", async () => {
    for (const path of ["/api/sessions", `/api/sessions/${sessionId}/messages`, "/health", "/v1/models"]) {
      const res = await rawRequest(base, { method: "GET", path, headers: { host: `attacker.example:${new URL(base).port}` } });
      expect(res.status, path).toBe(421);
      expect(res.body, path).not.toContain("secret plans");
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: "host_not_allowed" } });
    }
    expect((await upgradeStatus(base, "/ws", { host: "attacker.example" })).status).toBe(421);
  });

  it("ignores X-Forwarded-Host without TRUST_PROXY", async () => {
    const res = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { "x-forwarded-host": "attacker.example" } });
    expect(res.status).toBe(200);
  });

  it("refuses a cross-site simple request to interrupt (415), and a foreign page's JSON one (403)", async () => {
    const path = `/api/sessions/${sessionId}/interrupt`;
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await rawRequest(base, { method: "POST", path, headers: { "content-type": contentType, origin: FOREIGN }, body: "{}" });
      // The foreign Origin alone is refused first; without one the content type still is.
      expect(res.status, contentType).toBe(403);
      const noOrigin = await rawRequest(base, { method: "POST", path, headers: { "content-type": contentType }, body: "{}" });
      expect(noOrigin.status, contentType).toBe(415);
      expect(JSON.parse(noOrigin.body)).toMatchObject({ error: { code: "unsupported_media_type" } });
    }
    const ok = await rawRequest(base, { method: "POST", path, headers: { "content-type": "application/json; charset=utf-8" }, body: "{}" });
    expect(ok.status, ok.body).toBe(202);
  });
});

describe("ALLOWED_HOSTS, ALLOWED_ORIGINS and TRUST_PROXY", () => {
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      workers: false,
      env: { ALLOWED_HOSTS: "gateway.test", ALLOWED_ORIGINS: "https://console.test", TRUST_PROXY: "1" },
    });
    base = gw.gateway.url as string;
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it("answers a listed host name, and still refuses others", async () => {
    expect((await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { host: "gateway.test" } })).status).toBe(200);
    expect((await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { host: "Gateway.Test:8443" } })).status).toBe(200);
    expect((await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { host: "other.test" } })).status).toBe(421);
  });

  it("with TRUST_PROXY, judges the host the proxy forwarded", async () => {
    const forwarded = (host: string) => rawRequest(base, { method: "GET", path: "/health", headers: { "x-forwarded-host": host } });
    expect((await forwarded("attacker.example")).status).toBe(421);
    expect((await forwarded("gateway.test")).status).toBe(200);
    expect((await upgradeStatus(base, "/ws", { "x-forwarded-host": "attacker.example" })).status).toBe(421);
  });

  it("lets a listed origin open /ws and act on the API, and no other", async () => {
    expect((await upgradeStatus(base, "/ws", { origin: "https://console.test" })).status).toBe(101);
    expect((await upgradeStatus(base, "/ws", { origin: "https://console.test:444" })).status).toBe(403);
    expect((await upgradeStatus(base, "/ws", { origin: "http://console.test" })).status).toBe(403);
    // Own origin behind the proxy: the page came from the forwarded host.
    expect((await upgradeStatus(base, "/ws", { origin: "https://gateway.test", "x-forwarded-host": "gateway.test" })).status).toBe(101);
    const interrupt = (origin: string) =>
      rawRequest(base, { method: "POST", path: "/api/sessions/nobody/interrupt", headers: { "content-type": "application/json", origin }, body: "{}" });
    expect((await interrupt("https://console.test")).status).toBe(404);
    expect((await interrupt("https://other.test")).status).toBe(403);
  });
});

describe("a gateway with a key: foreign pages are refused as well", () => {
  const KEY = "browser-rules-key-0123456789";
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({ workers: false, env: { SWITCHBOARD_API_KEY: KEY } });
    base = gw.gateway.url as string;
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it("refuses /ws from a foreign page even with the key, and answers any host name", async () => {
    expect((await upgradeStatus(base, `/ws?token=${KEY}`, { origin: FOREIGN })).status).toBe(403);
    expect((await upgradeStatus(base, `/ws?token=${KEY}`)).status).toBe(101);
    // The key is the defence here; the host name is not checked.
    const res = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { host: "gateway.example.com", authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
  });
});
