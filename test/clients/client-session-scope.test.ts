// What an API or WebSocket client may address, through a running gateway (SQLite and PostgreSQL):
// a chat platform's session (here a signed webhook's) is refused by id on /v1/chat/completions
// and on a WebSocket `send`, with the catalogue's session_not_addressable; the client's own
// sessions still take messages. An Idempotency-Key without a session is scoped to the body: two
// clients with the same key and different bodies each get their own answer.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { githubSignature } from "../../src/adapters/webhook/index.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { makeTempDir } from "../support/tmp.js";
import { WsTestClient } from "./support/ws-client.js";

const SECRET = "webhook-secret-for-scope-tests";

describe.each([["sqlite"], ["postgres"]])("client sessions on %s", (backend) => {
  const temp = makeTempDir("sb-client-scope");
  const schema = uniqueSchema("scope");
  let gw: TestGateway;
  let ws: WsTestClient;

  beforeAll(async () => {
    const configFile = join(temp.dir, "switchboard.yaml");
    writeFileSync(configFile, JSON.stringify({ webhooks: { chat: { secret: SECRET, style: "github", reply: "sync" } } }));
    const store: Record<string, string> = backend === "postgres" ? { DATABASE_URL: testDatabaseUrl(), DATABASE_SCHEMA: schema } : {};
    gw = await startTestGateway({ env: { SWITCHBOARD_CONFIG: configFile, LOG_LEVEL: "silent", ...store } });
    ws = await WsTestClient.connect(`${gw.gateway.url!.replace(/^http/, "ws")}/ws`, null);
  }, 60_000);

  afterAll(async () => {
    await ws?.close();
    await gw?.stop();
    if (backend === "postgres") await dropSchema(testDatabaseUrl(), schema);
    temp.cleanup();
  });

  /** A webhook message: its session's id, from the sync reply. */
  async function platformSession(): Promise<string> {
    const body = JSON.stringify({ id: randomUUID(), chat_id: `room-${randomUUID()}`, user_id: "u-1", text: "hello from the platform" });
    const res = await fetch(`${gw.gateway.url}/webhooks/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": githubSignature(SECRET, body) },
      body,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { session_id: string }).session_id;
  }

  async function chat(text: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${gw.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
    });
  }

  async function transcriptLength(session: string): Promise<number> {
    const res = await fetch(`${gw.gateway.url}/api/sessions/${session}/messages`);
    return ((await res.json()) as { messages: unknown[] }).messages.length;
  }

  it("refuses X-Session-Id naming a platform's session with 403 session_not_addressable; nothing is written", async () => {
    const session = await platformSession();
    const before = await transcriptLength(session);
    for (const stream of [false, true]) {
      const res = await fetch(`${gw.gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": session },
        body: JSON.stringify({ model: "echo", stream, messages: [{ role: "user", content: "injected" }] }),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("session_not_addressable");
    }
    expect(await transcriptLength(session)).toBe(before);
  });

  it("refuses a WebSocket send to a platform's session with a session_not_addressable error frame", async () => {
    const session = await platformSession();
    const before = await transcriptLength(session);
    const from = ws.frames.length;
    ws.send({ type: "send", session_id: session, text: "injected", client_message_id: "m1" });
    const frame = await ws.waitFor((f) => f.session_id === session && (f.type === "error" || f.type === "ack"), 10_000, "the answer to the send", from);
    expect(frame).toMatchObject({ type: "error", code: "session_not_addressable", client_message_id: "m1" });
    expect(await transcriptLength(session)).toBe(before);
  });

  it("still takes messages to the client's own sessions, by id, from both clients", async () => {
    const session = `own-${randomUUID()}`;
    const first = await chat("first", { "x-session-id": session });
    expect(first.status).toBe(200);
    const again = await chat("second", { "x-session-id": session });
    expect(again.status).toBe(200);
    const from = ws.frames.length;
    ws.send({ type: "send", session_id: session, text: "third", client_message_id: "m2" });
    const ack = await ws.waitFor((f) => f.type === "ack" && f.client_message_id === "m2", 10_000, "the ack", from);
    expect(ack.status).toBe("accepted");
  });

  it("scopes an Idempotency-Key without a session to the body: another body gets its own answer", async () => {
    const key = `idem-${randomUUID()}`;
    const a = await chat("client A's question", { "idempotency-key": key });
    expect(a.status).toBe(200);
    const b = await chat("client B's question", { "idempotency-key": key });
    expect(b.status).toBe(200);
    const answerOf = async (res: Response): Promise<string> => ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
    expect(await answerOf(a)).toBe("Echo: client A's question");
    expect(await answerOf(b)).toBe("Echo: client B's question");
    expect(b.headers.get("x-session-id")).not.toBe(a.headers.get("x-session-id"));
    // The same body again is a retry: the first answer, in the same session.
    const retry = await chat("client A's question", { "idempotency-key": key });
    expect(await answerOf(retry)).toBe("Echo: client A's question");
    expect(retry.headers.get("x-session-id")).toBe(a.headers.get("x-session-id"));
  });
});
