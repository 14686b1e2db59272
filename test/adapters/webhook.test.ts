import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createWebhookAdapter,
  githubSignature,
  parseWebhookRoutes,
  signWebhook,
  standardSignature,
  verifyWebhook,
  type WebhookRoutes,
} from "../../src/adapters/webhook/index.js";
import type { PlatformAdapter } from "../../src/gateway/types.js";
import { PermanentSendError, RateLimitedError } from "../../src/gateway/types.js";
import { RecordingIngress } from "./support/recording-ingress.js";
import { serveRouters, silentLogger, type RunningApp } from "./support/http.js";

const GITHUB_SECRET = "It's a Secret to Everybody";
const STANDARD_SECRET = `whsec_${randomBytes(24).toString("base64")}`;

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The receiver's next answers; `silent`: it reads the request and never answers. */
interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  silent?: boolean;
}

/** A callback receiver that records requests and answers with a scripted status. */
async function startReceiver(): Promise<{ url: string; received: Received[]; answer: ScriptedAnswer; close(): Promise<void> }> {
  const received: Received[] = [];
  const answer: ScriptedAnswer = { status: 200 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      if (answer.silent) return;
      res.writeHead(answer.status, answer.headers);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/reply`,
    received,
    answer,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let ingress: RecordingIngress;
let adapter: PlatformAdapter;
let app: RunningApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let routes: WebhookRoutes;

beforeEach(async () => {
  receiver = await startReceiver();
  routes = {
    gh: { secret: GITHUB_SECRET, style: "github", reply: "sync" },
    std: { secret: STANDARD_SECRET, style: "standard", reply: "callback", callback_url: receiver.url },
    ghcb: { secret: GITHUB_SECRET, style: "github", reply: "callback", callback_url: receiver.url },
    slow: { secret: GITHUB_SECRET, style: "github", reply: "sync", sync_timeout_ms: 150 },
  };
  ingress = new RecordingIngress();
  adapter = createWebhookAdapter(routes, { logger: silentLogger, bodyLimitBytes: 16 * 1024 });
  app = await serveRouters(adapter.routes!(ingress));
});

afterEach(async () => {
  await app.close();
  await receiver.close();
});

function githubPost(route: string, body: string, delivery?: string, secret = GITHUB_SECRET): Promise<Response> {
  return fetch(`${app.url}/webhooks/${route}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-hub-signature-256": githubSignature(secret, body),
      ...(delivery ? { "x-github-delivery": delivery } : {}),
    },
    body,
  });
}

function standardPost(route: string, body: string, id: string, options: { nowMs?: number; tamper?: string } = {}): Promise<Response> {
  const headers = signWebhook("standard", STANDARD_SECRET, body, { id, nowMs: options.nowMs });
  return fetch(`${app.url}/webhooks/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: options.tamper ?? body,
  });
}

const message = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ chat_id: "room-7", user_id: "u-1", text: "ping from ci", ...extra });

describe("webhook ingress", () => {
  it("accepts a GitHub-signed delivery and answers a sync route with the reply", async () => {
    const res = await githubPost("gh", message(), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reply: "echo: ping from ci", session_id: "sess-webhook:gh:room-7" });
    expect(ingress.accepted[0]).toMatchObject({
      platform: "webhook",
      // The body has no id: the delivery is identified by what the signature covers, its bytes.
      platformMessageId: `gh:sha256:${createHash("sha256").update(message()).digest("hex")}`,
      sessionKey: "webhook:gh:room-7",
      chatId: "room-7",
      userId: "u-1",
      text: "ping from ci",
      replyTarget: null,
    });
  });

  it("accepts a Standard Webhooks delivery (whsec_ secret) and answers a callback route with 202", async () => {
    const res = await standardPost("std", message(), "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W");
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: true, session_id: "sess-webhook:std:room-7" });
    expect(ingress.accepted[0]).toMatchObject({
      platformMessageId: "std:msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
      replyTarget: { route: "std", chat_id: "room-7", user_id: "u-1", in_reply_to: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" },
    });
  });

  it("refuses tampered bodies and bad signatures with 401 in both styles", async () => {
    const body = message();
    const tamperedGithub = await fetch(`${app.url}/webhooks/gh`, {
      method: "POST",
      headers: { "x-hub-signature-256": githubSignature(GITHUB_SECRET, body), "x-github-delivery": "d1" },
      body: body.replace("ping", "pong"),
    });
    expect(tamperedGithub.status).toBe(401);
    expect((await githubPost("gh", body, "d2", "another secret")).status).toBe(401);
    expect((await fetch(`${app.url}/webhooks/gh`, { method: "POST", body })).status).toBe(401);

    expect((await standardPost("std", body, "msg_1", { tamper: body.replace("ping", "pong") })).status).toBe(401);
    const stale = await standardPost("std", body, "msg_2", { nowMs: Date.now() - 6 * 60_000 });
    expect(stale.status).toBe(401);
    expect(((await stale.json()) as { error: { message: string } }).error.message).toMatch(/timestamp/);
    // Signed for another id: the id is part of the signed content.
    const headers = signWebhook("standard", STANDARD_SECRET, body, { id: "msg_3" });
    const swapped = await fetch(`${app.url}/webhooks/std`, {
      method: "POST",
      headers: { ...headers, "webhook-id": "msg_4" },
      body,
    });
    expect(swapped.status).toBe(401);
    expect(ingress.calls).toHaveLength(0);
  });

  it("answers a repeated delivery with {duplicate: true} and records one message", async () => {
    const first = await githubPost("gh", message({ id: "delivery-1" }), "delivery-1");
    expect(first.status).toBe(200);
    const again = await githubPost("gh", message({ id: "delivery-1" }), "delivery-1");
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ duplicate: true });

    await standardPost("std", message(), "msg_dup");
    const againStd = await standardPost("std", message(), "msg_dup");
    expect(await againStd.json()).toEqual({ duplicate: true });
    expect(ingress.accepted).toHaveLength(2);
    expect(ingress.duplicates).toHaveLength(2);
  });

  it("github style: dedupes by the signed body's id, never by the unsigned X-GitHub-Delivery", async () => {
    const withId = await githubPost("gh", message({ id: 12345 }), "delivery-a");
    expect(withId.status).toBe(200);
    expect(ingress.accepted[0].platformMessageId).toBe("gh:12345");
    // The same signed body replayed under new delivery ids, or none: the same message.
    for (const delivery of ["delivery-b", "delivery-c", undefined]) {
      const again = await githubPost("gh", message({ id: 12345 }), delivery);
      expect(await again.json()).toEqual({ duplicate: true });
    }
    expect(ingress.calls.map((c) => c.message.platformMessageId)).toEqual(Array(4).fill("gh:12345"));
    expect(ingress.accepted).toHaveLength(1);
  });

  it("github style: a body without an id is identified by its bytes", async () => {
    const first = await githubPost("gh", message({ text: "no id here" }), "delivery-1");
    expect(first.status).toBe(200);
    const replay = await githubPost("gh", message({ text: "no id here" }), "delivery-2");
    expect(await replay.json()).toEqual({ duplicate: true });
    const other = await githubPost("gh", message({ text: "another message" }), "delivery-2");
    expect(other.status).toBe(200);
    expect(await other.json()).toMatchObject({ reply: "echo: another message" });
    expect(ingress.duplicates).toHaveLength(1);
  });

  it("answers 400 naming the bad field", async () => {
    const cases: Array<[string, RegExp]> = [
      [JSON.stringify({ user_id: "u", text: "hi" }), /chat_id/],
      [JSON.stringify({ chat_id: "c", user_id: "u", text: 5 }), /text/],
      [JSON.stringify({ chat_id: "c", user_id: "u", text: "   " }), /text/],
      [JSON.stringify({ chat_id: "c", text: "hi" }), /user_id/],
      ["[1,2]", /object/],
      ["{oops", /JSON/],
    ];
    for (const [index, [body, pattern]] of cases.entries()) {
      const res = await githubPost("gh", body, `bad-${index}`);
      expect(res.status, body).toBe(400);
      const error = ((await res.json()) as { error: { message: string; type: string } }).error;
      expect(error.message, body).toMatch(pattern);
      expect(error.type).toBe("invalid_request_error");
    }
    expect(ingress.calls).toHaveLength(0);
  });

  it("answers 404 for an unknown route and 413 for a body over the limit", async () => {
    const unknown = await githubPost("nope", message(), "d");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("unknown_route");
    const huge = await githubPost("gh", message({ pad: "x".repeat(20_000) }), "big");
    expect(huge.status).toBe(413);
    // Inherited object keys are not routes.
    expect((await githubPost("constructor", message(), "d")).status).toBe(404);
  });

  it("answers 504 when a sync reply does not come in time, with the message still recorded", async () => {
    ingress.reply = null;
    const res = await githubPost("slow", message(), "slow-1");
    expect(res.status).toBe(504);
    const body = (await res.json()) as { error: { code: string }; session_id: string };
    expect(body.error.code).toBe("reply_timeout");
    expect(body.session_id).toBe("sess-webhook:slow:room-7");
    expect(ingress.accepted).toHaveLength(1);
  });

  it("answers 503 when the message cannot be recorded", async () => {
    ingress.failWith = new Error("database is locked");
    expect((await githubPost("gh", message(), "x")).status).toBe(503);
  });
});

describe("webhook callbacks", () => {
  async function acceptedTarget(route: string): Promise<Record<string, unknown>> {
    const res = route === "std" ? await standardPost(route, message(), "msg_cb") : await githubPost(route, message(), "gh_cb");
    expect(res.status).toBe(202);
    return ingress.accepted.at(-1)!.replyTarget!;
  }

  it("posts a Standard-Webhooks-signed callback that the exported verify function accepts", async () => {
    const target = await acceptedTarget("std");
    const result = await adapter.send({ deliveryId: 31, sessionId: "sess-9", target, text: "pong", possibleDuplicate: false });
    expect(result.platformMessageId).toBe("dlv_31");
    expect(receiver.received).toHaveLength(1);
    const { headers, body } = receiver.received[0];
    const header = (name: string) => headers[name] as string | undefined;
    expect(verifyWebhook("standard", STANDARD_SECRET, header, body)).toEqual({ ok: true });
    expect(header("webhook-id")).toBe("dlv_31");
    expect(JSON.parse(body.toString())).toEqual({
      reply: "pong",
      session_id: "sess-9",
      chat_id: "room-7",
      user_id: "u-1",
      in_reply_to: "msg_cb",
      delivery_id: 31,
      possible_duplicate: false,
    });
    const tampered = Buffer.from(body.toString().replace("pong", "pang"));
    expect(verifyWebhook("standard", STANDARD_SECRET, header, tampered).ok).toBe(false);
    expect(verifyWebhook("standard", "whsec_" + randomBytes(24).toString("base64"), header, body).ok).toBe(false);
  });

  it("posts a GitHub-signed callback, the same message id on a resend, marked as a possible duplicate", async () => {
    const target = await acceptedTarget("ghcb");
    await adapter.send({ deliveryId: 5, sessionId: "s", target, text: "done", possibleDuplicate: false });
    await adapter.send({ deliveryId: 5, sessionId: "s", target, text: "done", possibleDuplicate: true });
    expect(receiver.received).toHaveLength(2);
    for (const { headers, body } of receiver.received) {
      expect(verifyWebhook("github", GITHUB_SECRET, (n) => headers[n] as string | undefined, body)).toEqual({ ok: true });
      expect(headers["x-github-delivery"]).toBe("dlv_5");
    }
    expect(JSON.parse(receiver.received[1].body.toString()).possible_duplicate).toBe(true);
  });

  it("maps callback failures: 429 -> RateLimitedError, 4xx -> PermanentSendError, 5xx -> retryable Error", async () => {
    const target = await acceptedTarget("std");
    const send = () => adapter.send({ deliveryId: 1, sessionId: "s", target, text: "x", possibleDuplicate: false });
    receiver.answer.status = 429;
    receiver.answer.headers = { "retry-after": "3" };
    const limited = await send().catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect((limited as RateLimitedError).retryAfterMs).toBe(3000);
    receiver.answer.headers = undefined;
    receiver.answer.status = 410;
    await expect(send()).rejects.toBeInstanceOf(PermanentSendError);
    receiver.answer.status = 502;
    const outage = await send().catch((e: unknown) => e);
    expect(outage).toBeInstanceOf(Error);
    expect(outage).not.toBeInstanceOf(PermanentSendError);
    await expect(
      adapter.send({ deliveryId: 2, sessionId: "s", target: { route: "gone" }, text: "x", possibleDuplicate: false }),
    ).rejects.toBeInstanceOf(PermanentSendError);
  });

  it("follows no redirect: a 3xx is a retryable failure and its Location is not asked", async () => {
    const target = await acceptedTarget("std");
    receiver.answer.status = 307;
    receiver.answer.headers = { location: `${receiver.url}/elsewhere` };
    const moved = await adapter.send({ deliveryId: 3, sessionId: "s", target, text: "x", possibleDuplicate: false }).catch((e: unknown) => e);
    expect(moved).toBeInstanceOf(Error);
    expect(moved).not.toBeInstanceOf(PermanentSendError);
    expect((moved as Error).message).toMatch(/answered HTTP 307/);
    expect(receiver.received).toHaveLength(1);
  });

  it("gives up on a receiver that never answers at the time limit, as a retryable failure", async () => {
    const quick = createWebhookAdapter(routes, { logger: silentLogger, bodyLimitBytes: 16 * 1024, callbackTimeoutMs: 300 });
    const target = await acceptedTarget("std");
    receiver.answer.silent = true;
    const started = performance.now();
    const error = await quick.send({ deliveryId: 4, sessionId: "s", target, text: "x", possibleDuplicate: false }).catch((e: unknown) => e);
    const waited = performance.now() - started;
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(PermanentSendError);
    expect((error as Error).message).toMatch(/webhook callback for 'std' failed/);
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(5_000);
    expect(receiver.received).toHaveLength(1);
  });
});

describe("webhook signing functions", () => {
  it("match the documented algorithms", () => {
    // GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
    expect(githubSignature(GITHUB_SECRET, "Hello, World!")).toBe(
      "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    );
    // Standard Webhooks reference vector.
    expect(
      standardSignature(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("validates route config with errors naming the key", () => {
    expect(() => parseWebhookRoutes({ a: { secret: "s3cret-of-sixteen-plus", style: "gitlab", reply: "sync" } })).toThrow(/webhooks\.a\.style/);
    expect(() => parseWebhookRoutes({ a: { secret: "s3cret-of-sixteen-plus", style: "github", reply: "callback" } })).toThrow(
      /webhooks\.a\.callback_url/,
    );
    expect(() => parseWebhookRoutes({ "a:b": { secret: "s3cret-of-sixteen-plus", style: "github", reply: "sync" } })).toThrow(/webhooks/);
  });
});
