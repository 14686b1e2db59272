// Platform requests before their signature is checked, through a running gateway, over raw
// sockets that send headers and only the start of a body: what the headers show wrong (no
// signature, a stale timestamp, a wrong secret token, a length over the platform's limit) is
// answered before the body arrives, and the bodies being read unverified share one budget of
// bytes in the process (503 with Retry-After past it), freed when their requests end.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { githubSignature } from "../../src/adapters/webhook/index.js";
import { DEFAULT_UNVERIFIED_BUDGET_BYTES } from "../../src/main/platform-gate.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";

const WEBHOOK_SECRET = "webhook-secret-for-budget-tests";
const TELEGRAM_SECRET = "telegram-secret-for-budget-tests";
const DECLARED = 1_000_000;

interface Upload {
  /** The status line and headers, once the server answers. */
  answer: Promise<{ status: number; headers: string }>;
  close(): void;
}

/** Sends a POST's headers (declaring `declared` bytes) and `sent` bytes of its body, then waits. */
function stalledUpload(base: string, path: string, headers: Record<string, string>, declared = DECLARED, sent = 100): Upload {
  const url = new URL(base);
  const socket: Socket = connect(Number(url.port), url.hostname);
  const lines = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, "content-type: application/json", `content-length: ${declared}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  socket.write(Buffer.alloc(sent, 0x20));
  socket.on("error", () => undefined);
  const answer = new Promise<{ status: number; headers: string }>((resolve) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) resolve({ status: Number(text.slice(9, 12)), headers: text.slice(0, end).toLowerCase() });
    });
  });
  return { answer, close: () => socket.destroy() };
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer to ${what} within ${ms} ms`)), ms))]);
}

describe("platform requests before their signature is checked", () => {
  const temp = makeTempDir("sb-unverified");
  let gw: TestGateway;
  const uploads: Upload[] = [];

  beforeAll(async () => {
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, JSON.stringify({ webhooks: { gh: { secret: WEBHOOK_SECRET, style: "github", reply: "sync" } } }));
    gw = await startTestGateway({
      env: {
        SWITCHBOARD_CONFIG: config,
        TRUST_PROXY: "1",
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_BOT_TOKEN: SLACK_TOKEN,
        SLACK_BOT_USER_ID: SLACK_BOT,
        SLACK_API_URL: "http://127.0.0.1:9/api/",
        TELEGRAM_BOT_TOKEN: "7012345678:AAtesttoken",
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        TELEGRAM_API_URL: "http://127.0.0.1:9",
        LOG_LEVEL: "silent",
      },
    });
  }, 60_000);

  afterAll(async () => {
    for (const upload of uploads) upload.close();
    await gw?.stop();
    temp.cleanup();
  });

  const start = (path: string, headers: Record<string, string>, declared = DECLARED): Upload => {
    const upload = stalledUpload(gw.gateway.url!, path, { "x-forwarded-for": `198.51.100.${uploads.length % 250}`, ...headers }, declared);
    uploads.push(upload);
    return upload;
  };

  it("answers what the headers show wrong before the body arrives", async () => {
    const cases: Array<[string, Record<string, string>, number]> = [
      ["/webhooks/gh", {}, 401],
      ["/slack/events", { "x-slack-signature": "v0=00", "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000) - 3600) }, 401],
      ["/telegram/webhook", { "x-telegram-bot-api-secret-token": "wrong-secret-of-some-length" }, 401],
      // Over Telegram's own limit, with the right secret.
      ["/telegram/webhook", { "x-telegram-bot-api-secret-token": TELEGRAM_SECRET }, 413],
    ];
    for (const [path, headers, status] of cases) {
      const { answer } = start(path, headers);
      expect((await within(answer, 5_000, `${path} ${JSON.stringify(headers)}`)).status).toBe(status);
    }
  });

  it("bounds the unverified bytes held at once across the platform routes: 503 with Retry-After past the budget", async () => {
    const held = Math.floor(DEFAULT_UNVERIFIED_BUDGET_BYTES / DECLARED);
    const room = DEFAULT_UNVERIFIED_BUDGET_BYTES - held * DECLARED;
    const answers: Array<{ status: number; headers: string }> = [];
    const stalled: Upload[] = [];
    const track = (upload: Upload): void => {
      stalled.push(upload);
      void upload.answer.then((a) => answers.push(a));
    };
    // Webhook deliveries with a signature header (a wrong one: their bodies never finish anyway).
    for (let i = 0; i < held + 12; i++) track(start("/webhooks/gh", { "x-hub-signature-256": "sha256=00" }));
    // Slack's route shares the budget: a body bigger than the room left is refused too.
    const slack = { "x-slack-signature": "v0=00", "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)) };
    track(start("/slack/events", slack, room + 1));
    await waitFor(() => answers.length >= 13, 10_000, "13 uploads refused");
    expect(answers.map((a) => a.status)).toEqual(Array(13).fill(503));
    expect(answers.every((a) => a.headers.includes("retry-after: 1"))).toBe(true);

    // Their requests gone, the budget is free again: a signed delivery is read and answered.
    for (const upload of stalled) upload.close();
    await waitFor(async () => {
      const body = JSON.stringify({ id: randomUUID(), chat_id: "room", user_id: "u-1", text: "after the flood" });
      const res = await fetch(`${gw.gateway.url}/webhooks/gh`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "192.0.2.1", "x-hub-signature-256": githubSignature(WEBHOOK_SECRET, body) },
        body,
      });
      return res.status === 200;
    }, 10_000, "a signed delivery to be answered");
  });
});
