import { afterEach, describe, expect, it } from "vitest";
import { connect, type Socket } from "node:net";
import { randomBytes } from "node:crypto";
import type { ClientOptions } from "ws";
import { startHub, TestClient, TOKEN, waitUntil, type HubFixture } from "./helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function hub(options: Parameters<typeof startHub>[0] = {}): Promise<HubFixture> {
  const fixture = await startHub(options);
  cleanups.push(() => fixture.close());
  return fixture;
}

async function client(fixture: HubFixture, options: ClientOptions = {}): Promise<TestClient> {
  const connected = await TestClient.connect(fixture.url(), options);
  cleanups.push(() => connected.socket.terminate());
  return connected;
}

/** A masked client text frame, as a browser would send it. */
function clientTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const header =
    payload.length < 126
      ? Buffer.from([0x81, 0x80 | payload.length])
      : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = payload[i] ^ mask[i % 4];
  return Buffer.concat([header, mask, masked]);
}

/** A raw TCP WebSocket client that subscribes and then stops reading. */
async function stalledSubscriber(port: number, sessionId: string): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  cleanups.push(() => {
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.write(
    `GET /ws?token=${TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
  );
  let received = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      received += chunk.toString("latin1");
      if (received.includes("subscribed")) {
        socket.off("data", onData);
        socket.pause();
        resolve();
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.write(clientTextFrame(JSON.stringify({ type: "subscribe", session_id: sessionId })));
  });
  expect(received.startsWith("HTTP/1.1 101")).toBe(true);
  return socket;
}

describe("WebSocket hub connections", () => {
  it("terminates a client that stops answering pings and keeps one that answers", async () => {
    const fixture = await hub({ heartbeatIntervalMs: 100 });
    const silent = await client(fixture, { autoPong: false });
    const healthy = await client(fixture);
    let healthyPings = 0;
    healthy.socket.on("ping", () => (healthyPings += 1));
    const started = Date.now();
    const code = await Promise.race([silent.closed, new Promise((resolve) => setTimeout(() => resolve("still open"), 3000))]);
    expect(code).toBe(1006);
    // The heartbeat's timing is the behaviour: dropped within a few 100 ms intervals, with a
    // bound 10x the interval.
    expect(Date.now() - started).toBeLessThan(1000);
    // The one that answers outlives three more heartbeats.
    const pingsAtDrop = healthyPings;
    await waitUntil(() => healthyPings >= pingsAtDrop + 3, 5000, "three more pings");
    expect(healthy.closeCode).toBeNull();
    expect(fixture.hub.clientCount).toBe(1);
    await healthy.subscribe("after-heartbeats");
  });

  it("drops a client that does not read its events, and keeps serving the others", async () => {
    const fixture = await hub({ maxBufferedBytes: 256 * 1024 });
    const reader = await client(fixture);
    await reader.subscribe("firehose");
    await stalledSubscriber(fixture.port, "firehose");
    expect(fixture.hub.clientCount).toBe(2);
    const chunk = "x".repeat(256 * 1024);
    const total = 80;
    for (let n = 0; n < total && fixture.hub.clientCount === 2; n++) {
      await fixture.bus.publish("firehose", "status", { n, text: chunk });
      await waitUntil(() => reader.frames.length >= n + 2, 5000, `event ${n} at the reader`);
    }
    await waitUntil(() => fixture.hub.clientCount === 1, 5000, "the stalled client to be dropped");
    expect(reader.closeCode).toBeNull();
    await fixture.bus.publish("firehose", "turn.completed", { n: "last" });
    await waitUntil(() => reader.frames.some((frame) => (frame.data as { n?: unknown } | undefined)?.n === "last"), 5000, "the last event");
  });

  it("close() closes every client with 1001 and stops taking connections", async () => {
    const fixture = await startHub();
    const a = await TestClient.connect(fixture.url());
    const b = await TestClient.connect(fixture.url());
    await a.subscribe("s");
    await fixture.hub.close();
    expect(await a.closed).toBe(1001);
    expect(await b.closed).toBe(1001);
    expect(fixture.hub.clientCount).toBe(0);
    expect(fixture.hub.sessionCount).toBe(0);
    await expect(TestClient.connect(fixture.url())).rejects.toThrow();
    await fixture.close();
  });
});
