// The API key and the limits around it, against running gateways: where a key may travel, what a
// malformed cookie gets, how wrong keys are throttled per client address, the WebSocket
// connection caps, the list limit, the admin pages' framing headers, and the minimum key length.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino, type Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { rawRequest, upgradeStatus, type RawResponse } from "../bad-input/raw-http.js";
import { spawnGatewayProcess, startTestGateway, testGatewayEnv, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";

const KEY = "keys-and-limits-key-0123456789";
const bearer = { authorization: `Bearer ${KEY}` };

/** A logger whose JSON lines the test can read. */
function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function errorBody(res: RawResponse): { code?: string; type?: string; message?: string } {
  return (JSON.parse(res.body) as { error?: { code?: string; type?: string; message?: string } }).error ?? {};
}

function connect(url: string, headers: Record<string, string>): Promise<{ status: number; ws: WebSocket; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once("open", () => resolve({ status: 101, ws }));
    ws.once("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0, ws, retryAfter: res.headers["retry-after"] });
      res.resume();
    });
    ws.once("error", reject);
  });
}

/** Each test speaks from its own client address (the trusted proxy's X-Forwarded-For). */
let nextAddress = 1;
const address = (): string => `198.51.100.${nextAddress++}`;
const from = (ip: string, headers: Record<string, string> = {}): Record<string, string> => ({ "x-forwarded-for": ip, ...headers });

describe("a keyed gateway behind one trusted proxy", () => {
  const log = capturingLogger();
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      workers: false,
      logger: log.logger,
      env: { SWITCHBOARD_API_KEY: KEY, TRUST_PROXY: "1", LOG_LEVEL: "info" },
    });
    base = gw.gateway.url as string;
    for (let i = 0; i < 5; i++) await gw.gateway.store.createSession(`listed-${i}`, { source: "api" });
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it("takes ?token= only on /ws and the admin redirect", async () => {
    const ip = address();
    for (const path of [`/api/sessions?token=${KEY}`, `/v1/models?token=${KEY}`, `/admin/queues/api/queues?token=${KEY}`]) {
      const res = await rawRequest(base, { method: "GET", path, headers: from(ip) });
      expect(res.status, path).toBe(401);
      expect(errorBody(res).code, path).toBe("missing_api_key");
    }
    expect((await upgradeStatus(base, `/ws?token=${KEY}`, from(ip))).status).toBe(101);
    const redirect = await rawRequest(base, { method: "GET", path: `/admin/queues?token=${KEY}`, headers: from(ip) });
    expect(redirect.status).toBe(303);
    expect(redirect.headers.location).toBe("/admin/queues");
  });

  it("answers a malformed admin cookie with 401 JSON, not a 500 and a stack trace", async () => {
    const before = log.lines().length;
    for (const path of ["/api/sessions", "/admin/queues", "/admin/queues/api/queues"]) {
      const res = await rawRequest(base, { method: "GET", path, headers: from(address(), { cookie: "switchboard_token=%E0%A4%A" }) });
      expect(res.status, path).toBe(401);
      expect(errorBody(res).type).toBe("authentication_error");
    }
    const logged = log.lines().slice(before);
    expect(logged.filter((l) => Number(l.level) >= 50), JSON.stringify(logged)).toEqual([]);
  });

  it("takes ?limit as an integer from 1 to 1000 and answers anything else with 400", async () => {
    const get = (query: string) => rawRequest(base, { method: "GET", path: `/api/sessions${query}`, headers: from(address(), bearer) });
    for (const bad of ["-1", "0", "1.5", "1001", "2e2", "ten", " 5", "5 "]) {
      const res = await get(`?limit=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(errorBody(res).code).toBe("invalid_limit");
    }
    const two = await get("?limit=2");
    expect(two.status).toBe(200);
    expect((JSON.parse(two.body) as { sessions: unknown[] }).sessions).toHaveLength(2);
    expect((JSON.parse((await get("?limit=1000")).body) as { sessions: unknown[] }).sessions).toHaveLength(5);
    expect((JSON.parse((await get("")).body) as { sessions: unknown[] }).sessions).toHaveLength(5);
  });

  it("does not let another site frame the admin pages", async () => {
    const ip = address();
    for (const path of ["/admin/queues", "/admin/queues/api/queues"]) {
      const res = await rawRequest(base, { method: "GET", path, headers: from(ip, bearer) });
      expect(res.status, path).toBe(200);
      expect(res.headers["content-security-policy"], path).toContain("frame-ancestors 'none'");
      expect(res.headers["x-frame-options"], path).toBe("DENY");
    }
  });

  it("rate-limits wrong keys per client address: 429 with Retry-After, even for the right key, on HTTP and /ws", async () => {
    const attacker = address();
    for (let i = 0; i < 10; i++) {
      const res = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: from(attacker, { authorization: `Bearer guess-${i}` }) });
      expect(res.status, `guess ${i}`).toBe(401);
    }
    const limited = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: from(attacker, { authorization: "Bearer guess-10" }) });
    expect(limited.status).toBe(429);
    expect(errorBody(limited).code).toBe("too_many_failed_keys");
    const retryAfter = Number(limited.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // A guess that happens to be right gets no answer either.
    expect((await rawRequest(base, { method: "GET", path: "/api/sessions", headers: from(attacker, bearer) })).status).toBe(429);
    const upgrade = await upgradeStatus(base, `/ws?token=${KEY}`, from(attacker));
    expect(upgrade.status).toBe(429);
    expect(Number(upgrade.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    // Other addresses are unaffected.
    expect((await rawRequest(base, { method: "GET", path: "/api/sessions", headers: from(address(), bearer) })).status).toBe(200);
  });

  it("counts wrong keys sent to /ws against the same address", async () => {
    const attacker = address();
    for (let i = 0; i < 10; i++) expect((await upgradeStatus(base, `/ws?token=guess-${i}`, from(attacker))).status).toBe(401);
    expect((await rawRequest(base, { method: "GET", path: "/v1/models", headers: from(attacker, bearer) })).status).toBe(429);
  });

  it("sets the admin cookie Secure when the trusted proxy says the client used TLS", async () => {
    const res = await rawRequest(base, { method: "GET", path: `/admin/queues?token=${KEY}`, headers: from(address(), { "x-forwarded-proto": "https" }) });
    expect(res.status).toBe(303);
    expect(String(res.headers["set-cookie"])).toMatch(/;\s*Secure/i);
  });
});

describe("WebSocket connection caps (ws.max_connections, ws.max_connections_per_ip)", () => {
  const temp = makeTempDir("sb-ws-caps");
  let gw: TestGateway;
  let wsUrl: string;

  beforeAll(async () => {
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, "ws:\n  max_connections: 3\n  max_connections_per_ip: 2\n");
    gw = await startTestGateway({ workers: false, env: { SWITCHBOARD_API_KEY: KEY, SWITCHBOARD_CONFIG: config, TRUST_PROXY: "1" } });
    wsUrl = `${(gw.gateway.url as string).replace(/^http/, "ws")}/ws`;
  });

  afterAll(async () => {
    await gw?.stop();
    temp.cleanup();
  });

  it("caps WebSocket connections per client address and per process (503 with Retry-After), and frees the slot on close", async () => {
    const a = address();
    const b = address();
    const opened: WebSocket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const c = await connect(wsUrl, from(a, bearer));
        opened.push(c.ws);
        expect(c.status).toBe(101);
      }
      const overAddress = await connect(wsUrl, from(a, bearer));
      expect(overAddress.status).toBe(503);
      expect(Number(overAddress.retryAfter)).toBeGreaterThanOrEqual(1);
      const third = await connect(wsUrl, from(b, bearer));
      opened.push(third.ws);
      expect(third.status).toBe(101);
      const overProcess = await connect(wsUrl, from(address(), bearer));
      expect(overProcess.status).toBe(503);
      // A closed connection frees its slot.
      const closing = opened.shift() as WebSocket;
      await new Promise<void>((resolve) => {
        closing.once("close", () => resolve());
        closing.close();
      });
      const again = await waitFor(async () => {
        const c = await connect(wsUrl, from(a, bearer));
        if (c.status === 101) return c;
        c.ws.terminate();
        return null;
      }, 5000, "a freed slot");
      opened.push(again.ws);
    } finally {
      for (const ws of opened) ws.terminate();
    }
  });

});

describe("a keyed gateway with no proxy trusted", () => {
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    gw = await startTestGateway({ workers: false, env: { SWITCHBOARD_API_KEY: KEY } });
    base = gw.gateway.url as string;
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it("ignores X-Forwarded-Proto: no Secure cookie over plain HTTP", async () => {
    const res = await rawRequest(base, { method: "GET", path: `/admin/queues?token=${KEY}`, headers: { "x-forwarded-proto": "https" } });
    expect(res.status).toBe(303);
    expect(String(res.headers["set-cookie"])).not.toMatch(/Secure/i);
  });

  it("ignores X-Forwarded-For: a new forged address per guess does not escape the limit", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { "x-forwarded-for": `203.0.113.${i}`, authorization: `Bearer guess-${i}` } });
      expect(res.status).toBe(401);
    }
    const res = await rawRequest(base, { method: "GET", path: "/api/sessions", headers: { "x-forwarded-for": "203.0.113.99", authorization: "Bearer guess-x" } });
    expect(res.status).toBe(429);
  });
});

describe("the minimum key length", () => {
  it("refuses to serve beyond loopback with a key shorter than 16 characters", async () => {
    const temp = makeTempDir("sb-short-key");
    try {
      const env = testGatewayEnv(temp.dir, { HOST: "0.0.0.0", SWITCHBOARD_API_KEY: "fifteen-chars!!" });
      await expect(spawnGatewayProcess(["serve"], env)).rejects.toThrow(/SWITCHBOARD_API_KEY: must be at least 16 characters/);
    } finally {
      temp.cleanup();
    }
  }, 60_000);
});
