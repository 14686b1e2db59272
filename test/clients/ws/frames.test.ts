import { afterEach, describe, expect, it } from "vitest";
import { startHub, TestClient, type HubFixture } from "./helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function setup(options: Parameters<typeof startHub>[0] = {}): Promise<{ fixture: HubFixture; client: TestClient }> {
  const fixture = await startHub(options);
  cleanups.push(() => fixture.close());
  const client = await TestClient.connect(fixture.url());
  cleanups.push(() => client.socket.terminate());
  return { fixture, client };
}

/** After an error the same connection must still subscribe and receive events. */
async function expectStillServing(fixture: HubFixture, client: TestClient, sessionId = "still-alive"): Promise<void> {
  await client.subscribe(sessionId);
  await fixture.bus.publish(sessionId, "status", { text: "still here" });
  expect(await client.next()).toMatchObject({ type: "event", session_id: sessionId, data: { text: "still here" } });
}

describe("WebSocket hub frame validation", () => {
  it.each([
    ["not JSON", "{nope", "bad_json"],
    ["a JSON array", "[1,2]", "bad_frame"],
    ["a JSON string", '"subscribe"', "bad_frame"],
    ["no type", JSON.stringify({ session_id: "s" }), "bad_frame"],
    ["an unknown type", JSON.stringify({ type: "teleport", session_id: "s" }), "unknown_type"],
    ["a numeric session_id", JSON.stringify({ type: "subscribe", session_id: 5 }), "bad_frame"],
    ["an empty session_id", JSON.stringify({ type: "subscribe", session_id: "" }), "bad_frame"],
    ["a since that is no event id", JSON.stringify({ type: "subscribe", session_id: "s", since: "yesterday" }), "bad_frame"],
    ["a send without text", JSON.stringify({ type: "send", session_id: "s", client_message_id: "c1" }), "bad_frame"],
    ["a send with numeric text", JSON.stringify({ type: "send", session_id: "s", text: 42 }), "bad_frame"],
    ["an interrupt with a string hard", JSON.stringify({ type: "interrupt", session_id: "s", hard: "yes" }), "bad_frame"],
  ])("answers %s with an error frame and keeps serving", async (_label, frame, code) => {
    const { fixture, client } = await setup();
    client.send(frame);
    const reply = await client.next();
    expect(reply).toMatchObject({ type: "error", code });
    expect(typeof reply.message).toBe("string");
    await expectStillServing(fixture, client);
  });

  it("names the bad field in the message", async () => {
    const { client } = await setup();
    client.send({ type: "send", session_id: "s", text: 42 });
    expect((await client.next()).message).toMatch(/text/);
  });

  it("answers binary frames with bad_frame and keeps serving", async () => {
    const { fixture, client } = await setup();
    client.socket.send(Buffer.from(JSON.stringify({ type: "subscribe", session_id: "s" })), { binary: true });
    expect(await client.next()).toMatchObject({ type: "error", code: "bad_frame" });
    await expectStillServing(fixture, client);
  });

  it("answers a frame over maxFrameBytes with frame_too_large and keeps serving", async () => {
    const { fixture, client } = await setup({ maxFrameBytes: 1024 });
    client.send({ type: "send", session_id: "s", text: "x".repeat(4000), client_message_id: "big" });
    expect(await client.next()).toMatchObject({ type: "error", code: "frame_too_large" });
    expect(fixture.ingress.accepted).toHaveLength(0);
    await expectStillServing(fixture, client);
  });

  it("closes the connection with 1009 for a frame over closeFrameBytes", async () => {
    const { client } = await setup({ maxFrameBytes: 1024, closeFrameBytes: 8192 });
    client.send({ type: "send", session_id: "s", text: "x".repeat(20_000) });
    expect(await client.closed).toBe(1009);
  });

  it("answers too_many_subscriptions past the limit, keeps the others, and allows resubscribing", async () => {
    const { fixture, client } = await setup({ maxSubscriptionsPerClient: 2 });
    await client.subscribe("a");
    await client.subscribe("b");
    client.send({ type: "subscribe", session_id: "c" });
    expect(await client.next()).toMatchObject({ type: "error", code: "too_many_subscriptions", session_id: "c" });
    await client.subscribe("a");
    await fixture.bus.publish("c", "status", { n: 0 });
    await fixture.bus.publish("b", "status", { n: 1 });
    expect(await client.next()).toMatchObject({ type: "event", session_id: "b" });
    client.send({ type: "unsubscribe", session_id: "a" });
    expect(await client.next()).toMatchObject({ type: "unsubscribed", session_id: "a" });
    await expectStillServing(fixture, client, "c");
  });
});
