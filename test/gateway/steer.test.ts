// Busy mode 'steer' through a running gateway whose model is a local fake OpenAI server: a
// message that arrives while a turn runs joins that turn at its next model step (the fake
// records what each model request carried), and makes no turn or reply of its own; one that
// arrives during the turn's last step runs as the next turn. The webhook callback route shows
// how many replies went out.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { signWebhook } from "../../src/adapters/webhook/index.js";
import type { GatewayEvent } from "../../src/gateway/types.js";
import { messagesOf, startFakeOpenAI, textOfMessage, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { startCallbackReceiver, type CallbackReceiver } from "../platforms/support/callback-receiver.js";
import { inboxRowOf, settle } from "../platforms/support/probes.js";

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;
let fake: FakeOpenAI;
let receiver: CallbackReceiver;
let gw: TestGateway;
let configDir: ReturnType<typeof makeTempDir>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  receiver = await startCallbackReceiver();
  configDir = makeTempDir("sb-steer");
  const configFile = join(configDir.dir, "switchboard.yaml");
  writeFileSync(
    configFile,
    toYaml({
      busy_modes: { webhook: "steer" },
      webhooks: { hooks: { secret: SECRET, style: "standard", reply: "callback", callback_url: receiver.url } },
    }),
  );
  gw = await startTestGateway({
    http: true,
    workers: true,
    env: { SWITCHBOARD_CONFIG: configFile, LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model" },
  });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await receiver?.close();
  await fake?.close();
  configDir?.cleanup();
});

beforeEach(() => {
  fake.setDefault({ kind: "echo" });
});

const token = (): string => randomBytes(4).toString("hex");

async function post(chat: string, id: string, text: string): Promise<void> {
  const body = JSON.stringify({ chat_id: chat, user_id: "u-1", text });
  const res = await fetch(`${gw.gateway.url}/webhooks/hooks`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signWebhook("standard", SECRET, body, { id }) },
    body,
  });
  expect(res.status).toBe(202);
}

function requestsMentioning(text: string): RecordedRequest[] {
  return fake.completionRequests().filter((r) => messagesOf(r).some((m) => m.role === "user" && textOfMessage(m).includes(text)));
}

/** "role: text" of a model request, tool calls and results by name, without the system prompt. */
function shapeOf(request: RecordedRequest): string[] {
  return messagesOf(request)
    .filter((m) => m.role !== "system")
    .map((m) => (m.tool_calls?.length ? `assistant calls ${m.tool_calls.map((c) => c.function.name).join(",")}` : m.role === "tool" ? "tool result" : `${m.role}: ${textOfMessage(m)}`));
}

async function eventsOf(conversationId: string): Promise<GatewayEvent[]> {
  const all: GatewayEvent[] = [];
  for await (const page of gw.gateway.events.replay(conversationId, { ms: 0, seq: 0 })) all.push(...page);
  return all;
}

function callbacksFor(id: string): number {
  return receiver.received.filter((r) => (JSON.parse(r.body.toString("utf8")) as { in_reply_to?: string }).in_reply_to === id).length;
}

describe("busy mode steer", () => {
  it("hands a message sent during a tool call to the running turn's next model request, with no turn or reply of its own", async () => {
    const chat = `room-${token()}`;
    const first = `what time is it ${token()}`;
    const second = `and in Paris please ${token()}`;
    // Step 1 streams a tool call and finishes only once the second message is recorded; step 2
    // answers (the echo of the last user text).
    const gate = `steer-${token()}`;
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "get_current_time", arguments: { timezone: "UTC" } }], argChunkSize: 4, chunkDelayMs: 20, holdUntil: gate });
    const firstId = `a-${token()}`;
    const secondId = `b-${token()}`;
    await post(chat, firstId, first);
    await fake.waitFor(() => requestsMentioning(first).length === 1, 10_000, "the turn's first model request");
    await post(chat, secondId, second);
    const rowB = await inboxRowOf(gw.gateway, "webhook", `hooks:${secondId}`);
    fake.release(gate);
    await waitFor(async () => (await gw.gateway.store.getInboxRow(rowB.id))?.status === "done", 15_000, "the steered row to be completed");
    await settle(500); // a wrongly scheduled second turn would show itself now

    // The same turn's next model request carried the new message after the tool result.
    const requests = requestsMentioning(first);
    expect(requests).toHaveLength(2);
    expect(shapeOf(requests[1])).toEqual([`user: ${first}`, "assistant calls get_current_time", "tool result", `user: ${second}`]);
    expect(requestsMentioning(second)).toHaveLength(1);

    // Both inbox rows are answered by that one turn, with its one reply.
    const rowA = await inboxRowOf(gw.gateway, "webhook", `hooks:${firstId}`);
    const [a, b] = await Promise.all([gw.gateway.store.getInboxRow(rowA.id), gw.gateway.store.getInboxRow(rowB.id)]);
    expect(a).toMatchObject({ status: "done", reply: `Echo: ${second}` });
    expect(b).toMatchObject({ status: "done", reply: `Echo: ${second}` });

    // The transcript has the message where it joined, with its platform id and display data.
    const rows = await gw.gateway.store.getMessages(await gw.gateway.store.resolveTip(rowA.session_id));
    expect(rows.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
    expect(rows[3]).toMatchObject({ content: second, platform_message_id: `hooks:${secondId}`, display_kind: "webhook" });
    expect(rows[3].display_metadata).toMatchObject({ route: "hooks", delivery_id: secondId });

    // One turn, announced with the steered row; one reply went out.
    const events = await eventsOf(rowA.session_id);
    expect(events.filter((e) => e.kind === "turn.started")).toHaveLength(1);
    const steered = events.filter((e) => e.kind === "turn.steered");
    expect(steered).toHaveLength(1);
    expect(steered[0].data.inbox_ids).toEqual([rowA.id, rowB.id]);
    expect(events.filter((e) => e.kind === "turn.completed")).toHaveLength(1);
    await waitFor(() => callbacksFor(firstId) === 1, 10_000, "the reply callback");
    await settle(300);
    expect(callbacksFor(firstId)).toBe(1);
    expect(callbacksFor(secondId)).toBe(0);
  }, 40_000);

  it("runs a message that arrives during the turn's last model step as the next turn", async () => {
    const chat = `room-${token()}`;
    const first = `time please ${token()}`;
    const second = `one more thing ${token()}`;
    // Step 1 asks for a tool at once; step 2, the last, answers and ends only once the second
    // message is recorded: no model step follows it.
    const gate = `last-${token()}`;
    fake.enqueue(
      { kind: "tool_calls", calls: [{ name: "get_current_time", arguments: {} }] },
      { kind: "text", text: "It is noon, more or less, as far as I can tell.", chunkDelayMs: 20, holdUntil: gate },
    );
    const firstId = `a-${token()}`;
    const secondId = `b-${token()}`;
    await post(chat, firstId, first);
    await fake.waitFor(() => requestsMentioning(first).length === 2, 10_000, "the turn's last model request");
    await post(chat, secondId, second);
    const rowB = await inboxRowOf(gw.gateway, "webhook", `hooks:${secondId}`);
    fake.release(gate);
    await waitFor(async () => (await gw.gateway.store.getInboxRow(rowB.id))?.status === "done", 15_000, "the second row to be answered");

    const rowA = await inboxRowOf(gw.gateway, "webhook", `hooks:${firstId}`);
    expect(await gw.gateway.store.getInboxRow(rowA.id)).toMatchObject({ status: "done", reply: "It is noon, more or less, as far as I can tell." });
    expect(await gw.gateway.store.getInboxRow(rowB.id)).toMatchObject({ status: "done", reply: `Echo: ${second}` });
    // The first turn's requests never saw it; its own turn did, after the whole first turn.
    expect(requestsMentioning(first).slice(0, 2).every((r) => !shapeOf(r).some((line) => line.includes(second)))).toBe(true);
    const own = requestsMentioning(second);
    expect(own).toHaveLength(1);
    expect(shapeOf(own[0]).slice(-2)).toEqual(["assistant: It is noon, more or less, as far as I can tell.", `user: ${second}`]);
    const events = await eventsOf(rowA.session_id);
    expect(events.filter((e) => e.kind === "turn.started").map((e) => e.data.inbox_ids)).toEqual([[rowA.id], [rowB.id]]);
    expect(events.some((e) => e.kind === "turn.steered")).toBe(false);
    await waitFor(() => callbacksFor(secondId) === 1, 10_000, "the second reply callback");
    expect(callbacksFor(firstId)).toBe(1);
  }, 40_000);
});
