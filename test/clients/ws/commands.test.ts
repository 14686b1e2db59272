import { afterEach, describe, expect, it } from "vitest";
import { startHub, TestClient, type HubFixture } from "./helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function setup(): Promise<{ fixture: HubFixture; client: TestClient }> {
  const fixture = await startHub();
  cleanups.push(() => fixture.close());
  const client = await TestClient.connect(fixture.url());
  cleanups.push(() => client.socket.terminate());
  return { fixture, client };
}

describe("WebSocket hub commands", () => {
  it("hands a send to the gateway as a websocket InboundMessage and acks it", async () => {
    const { fixture, client } = await setup();
    const before = Date.now();
    client.send({ type: "send", session_id: "sess-1", text: "hello there", client_message_id: "cm-1" });
    expect(await client.next()).toEqual({ type: "ack", client_message_id: "cm-1", status: "accepted", session_id: "sess-1" });
    expect(fixture.ingress.accepted).toHaveLength(1);
    const message = fixture.ingress.accepted[0];
    expect(message).toMatchObject({
      platform: "websocket",
      platformMessageId: "sess-1:cm-1",
      sessionKey: "websocket:sess-1",
      sessionId: "sess-1",
      text: "hello there",
      threadId: null,
    });
    expect(message.receivedAt).toBeGreaterThanOrEqual(before);
    expect(message.receivedAt).toBeLessThanOrEqual(Date.now());
  });

  it("acks a resent client_message_id as a duplicate", async () => {
    const { fixture, client } = await setup();
    client.send({ type: "send", session_id: "s", text: "once", client_message_id: "same" });
    client.send({ type: "send", session_id: "s", text: "once", client_message_id: "same" });
    expect((await client.take(2)).map((frame) => frame.status)).toEqual(["accepted", "duplicate"]);
    expect(fixture.ingress.accepted.map((message) => message.platformMessageId)).toEqual(["s:same", "s:same"]);
  });

  it("generates a message id when the client gives none, and returns it in the ack", async () => {
    const { fixture, client } = await setup();
    client.send({ type: "send", session_id: "s", text: "no id" });
    const ack = await client.next();
    expect(ack).toMatchObject({ type: "ack", status: "accepted", session_id: "s" });
    expect(typeof ack.client_message_id).toBe("string");
    expect(ack.client_message_id).not.toBe("");
    expect(fixture.ingress.accepted[0].platformMessageId).toBe(`s:${String(ack.client_message_id)}`);
  });

  it("acks a message the gateway rejected with its reason", async () => {
    const { fixture, client } = await setup();
    fixture.ingress.reject = "text is longer than 10 characters";
    client.send({ type: "send", session_id: "s", text: "far too long a message", client_message_id: "r1" });
    expect(await client.next()).toEqual({
      type: "ack",
      client_message_id: "r1",
      status: "rejected",
      session_id: "s",
      reason: "text is longer than 10 characters",
    });
  });

  it("answers internal when the gateway fails, and keeps serving", async () => {
    const { fixture, client } = await setup();
    fixture.ingress.accept = async () => {
      throw new Error("database is locked");
    };
    client.send({ type: "send", session_id: "s", text: "hi", client_message_id: "x1" });
    const reply = await client.next();
    expect(reply).toMatchObject({ type: "error", code: "internal", client_message_id: "x1", session_id: "s" });
    expect(String(reply.message)).not.toMatch(/database/);
    await client.subscribe("s");
  });

  it("hands an interrupt to the gateway with its text and hard flag", async () => {
    const { fixture, client } = await setup();
    client.send({ type: "interrupt", session_id: "s1", text: "actually, stop", hard: true });
    client.send({ type: "interrupt", session_id: "s2" });
    // Frames are handled in order: once this subscribe is confirmed, both interrupts were handled.
    await client.subscribe("s1");
    expect(fixture.ingress.interrupts).toEqual([
      { sessionId: "s1", options: { text: "actually, stop", hard: true } },
      { sessionId: "s2", options: {} },
    ]);
  });
});
