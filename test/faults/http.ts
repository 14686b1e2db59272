// Small HTTP helpers for the fault tests: a signed webhook delivery, an API chat request, and a
// local endpoint that receives webhook callbacks.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { githubSignature } from "../../src/adapters/webhook/signing.js";

export const WEBHOOK_SECRET = "fault-test-secret";

/** YAML for a github-style callback route named `faults`. */
export function webhookConfig(callbackUrl: string): string {
  return `webhooks:\n  faults:\n    secret: ${WEBHOOK_SECRET}\n    style: github\n    reply: callback\n    callback_url: ${callbackUrl}\n`;
}

export interface Answer {
  status: number;
  body: string;
  ms: number;
}

export async function postWebhook(baseUrl: string, delivery: { id: string; chat_id: string; text: string }): Promise<Answer> {
  const body = JSON.stringify({ ...delivery, user_id: "fault-user" });
  const started = performance.now();
  const res = await fetch(`${baseUrl}/webhooks/faults`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-delivery": delivery.id, "x-hub-signature-256": githubSignature(WEBHOOK_SECRET, body) },
    body,
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: await res.text(), ms: performance.now() - started };
}

export async function askApi(baseUrl: string, sessionId: string, text: string): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": sessionId },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
    signal: AbortSignal.timeout(90_000),
  });
  return { status: res.status, body: await res.text(), ms: performance.now() - started };
}

export function replyOf(answer: Answer): string {
  const parsed = JSON.parse(answer.body) as { choices?: Array<{ message?: { content?: string } }> };
  return parsed.choices?.[0]?.message?.content ?? "";
}

export interface CallbackSink {
  url: string;
  /** Replies received, by the delivery they answer (`in_reply_to`). */
  replies: Map<string, string[]>;
  close(): Promise<void>;
}

export async function startCallbackSink(): Promise<CallbackSink> {
  const replies = new Map<string, string[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { in_reply_to?: string; reply?: string };
        if (body.in_reply_to) replies.set(body.in_reply_to, [...(replies.get(body.in_reply_to) ?? []), body.reply ?? ""]);
      } catch {
        // not a callback body: ignored
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
