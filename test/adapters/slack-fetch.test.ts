// The WebClient's fetch (undici's request API) against a local server that answers the way Slack's
// Web API does: the form body and headers arrive as sent, the JSON answer and its headers come
// back, a 429's Retry-After still becomes a rate-limit error, an abort stops the request, and a
// call Slack does not answer ends at the client's time limit.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSlackFetch } from "../../src/adapters/slack/buffered-fetch.js";
import { createSlackWebClient, toSendError } from "../../src/adapters/slack/client.js";
import { PermanentSendError, RateLimitedError } from "../../src/gateway/types.js";

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

const slackFetch = createSlackFetch();

describe("the Slack WebClient's fetch", () => {
  let server: Server;
  let base = "";
  const seen: Seen[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        seen.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, contentType: req.headers["content-type"], body });
        if (req.url === "/api/chat.postMessage" && body.includes("limited")) {
          res.writeHead(429, { "retry-after": "7", "content-type": "application/json" }).end('{"ok":false,"error":"ratelimited"}');
        } else if (req.url === "/api/slow") {
          setTimeout(() => res.end("{}"), 5_000).unref();
        } else {
          res.writeHead(200, { "content-type": "application/json; charset=utf-8", "x-slack-req-id": "r-1" }).end(JSON.stringify({ ok: true, ts: "1.0001", channel: "C1" }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("sends the form body and headers as given and hands back status, headers and the JSON answer", async () => {
    const response = await slackFetch(`${base}chat.postMessage`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Bearer xoxb-test" },
      body: "channel=C1&text=hello",
    });
    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.headers.get("x-slack-req-id")).toBe("r-1");
    expect(Object.fromEntries(response.headers.entries())["content-type"]).toContain("application/json");
    expect(await response.json()).toEqual({ ok: true, ts: "1.0001", channel: "C1" });
    expect(seen.at(-1)).toEqual({ method: "POST", url: "/api/chat.postMessage", authorization: "Bearer xoxb-test", contentType: "application/x-www-form-urlencoded", body: "channel=C1&text=hello" });
  });

  it("carries the WebClient's calls: a post comes back as its result, a 429 as a rate limit with Retry-After", async () => {
    const client = createSlackWebClient("xoxb-test", base, pino({ level: "silent" }));
    const posted = await client.chat.postMessage({ channel: "C1", text: "hi there" });
    expect(posted).toMatchObject({ ok: true, ts: "1.0001" });
    expect(new URLSearchParams(seen.at(-1)?.body).get("text")).toBe("hi there");
    const limited = await client.chat.postMessage({ channel: "C1", text: "limited" }).catch((err: unknown) => err);
    const error = toSendError(limited, "chat.postMessage");
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(7_000);
  });

  it("stops a request when its signal aborts", async () => {
    const started = performance.now();
    const answer = await slackFetch(`${base}slow`, { method: "POST", body: "x=1", signal: AbortSignal.timeout(200) }).catch((err: Error) => err);
    expect(answer).toBeInstanceOf(Error);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("ends a call that gets no answer at the time limit, with no signal of its own, as an error the deliveries retry", async () => {
    const started = performance.now();
    const answer = await createSlackFetch(300)(`${base}slow`, { method: "POST", body: "x=1" }).catch((err: Error) => err);
    expect(answer).toBeInstanceOf(Error);
    expect(performance.now() - started).toBeLessThan(3_000);

    const client = createSlackWebClient("xoxb-test", base, pino({ level: "silent" }), 300);
    const call = performance.now();
    const failed = await client.apiCall("slow").catch((err: unknown) => err);
    expect(performance.now() - call).toBeLessThan(3_000);
    const error = toSendError(failed, "slow");
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(RateLimitedError);
    expect(error).not.toBeInstanceOf(PermanentSendError);
  });
});
