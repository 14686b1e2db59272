import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { EventBus } from "../../../src/bus/event-bus.js";
import { newRedisClient, testRedisUrl, uniquePrefix, deletePrefix } from "../../support/redis.js";
import { startHub, TestClient, waitUntil, type Frame, type HubFixture } from "./helpers.js";

const PUBLISHER = fileURLToPath(new URL("./fixtures/publisher.ts", import.meta.url));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function hub(options: Parameters<typeof startHub>[0] = {}): Promise<HubFixture> {
  const fixture = await startHub(options);
  cleanups.push(() => fixture.close());
  return fixture;
}

async function client(fixture: HubFixture): Promise<TestClient> {
  const connected = await TestClient.connect(fixture.url());
  cleanups.push(() => connected.socket.terminate());
  return connected;
}

function runPublisher(prefix: string, sessionId: string, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", PUBLISHER, prefix, sessionId, String(count)], {
      env: { ...process.env, REDIS_URL: testRedisUrl() },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`publisher exited with ${code}: ${stderr}`));
    });
  });
}

function ns(frames: Frame[]): unknown[] {
  return frames.map((frame) => (frame.data as { n: unknown }).n);
}

describe("WebSocket hub events", () => {
  it("delivers, in order, events published by another OS process", async () => {
    const fixture = await hub();
    const watcher = await client(fixture);
    await watcher.subscribe("cross");
    await runPublisher(fixture.prefix, "cross", 50);
    const frames = await watcher.take(50, 10_000);
    expect(ns(frames)).toEqual(Array.from({ length: 50 }, (_, n) => n));
    expect(frames.every((frame) => frame.type === "event" && frame.session_id === "cross")).toBe(true);
    expect(frames[49]).toMatchObject({ kind: "turn.completed" });
    expect(typeof frames[0].ts).toBe("number");
    const stored = await fixture.redis.xrange(fixture.bus.streamKey("cross"), "-", "+");
    expect(frames.map((frame) => frame.id)).toEqual(stored.map(([id]) => id));
  });

  it("delivers the same events in the same order through two gateway processes", async () => {
    const prefix = uniquePrefix("ws2");
    const admin = newRedisClient();
    cleanups.push(async () => {
      await deletePrefix(admin, prefix);
      admin.disconnect();
    });
    const first = await hub({ prefix });
    const second = await hub({ prefix });
    const onFirst = await client(first);
    const onSecond = await client(second);
    await onFirst.subscribe("shared");
    await onSecond.subscribe("shared");
    // Worker processes publishing concurrently.
    const workers = [new EventBus({ redis: admin, prefix }), new EventBus({ redis: newRedisClient(), prefix })];
    await Promise.all(
      workers.map(async (worker, w) => {
        for (let n = 0; n < 30; n++) await worker.publish("shared", "status", { w, n });
      }),
    );
    const a = await onFirst.take(60);
    const b = await onSecond.take(60);
    expect(a.map((frame) => frame.id)).toEqual(b.map((frame) => frame.id));
    const ids = a.map((frame) => frame.id as string);
    expect([...ids].sort(compareIds)).toEqual(ids);
    for (const worker of workers) await worker.close();
  });

  it("after a reconnect with since, sends exactly the missed events, then live ones", async () => {
    const fixture = await hub();
    const first = await client(fixture);
    await first.subscribe("s");
    for (let n = 0; n < 3; n++) await fixture.bus.publish("s", "status", { n });
    const seen = await first.take(3);
    first.socket.terminate();
    for (let n = 3; n < 8; n++) await fixture.bus.publish("s", n === 5 ? "status" : "status", { n });

    const again = await client(fixture);
    const replayed = await again.subscribe("s", seen[2].id as string);
    expect(ns(replayed)).toEqual([3, 4, 5, 6, 7]);
    await fixture.bus.publish("s", "turn.completed", { n: 8 });
    expect(ns([await again.next()])).toEqual([8]);
    await again.expectSilence(100);
  });

  it("says so with an events_trimmed error when since is older than the stored events, then replays what is kept", async () => {
    const fixture = await hub();
    // A publisher that keeps only a short stream: Redis trims whole nodes of 100 entries.
    const trimming = new EventBus({ redis: fixture.redis, prefix: fixture.prefix, maxLenPerSession: 10 });
    const first = await trimming.publish("t", "status", { n: 0 });
    for (let n = 1; n < 250; n++) await trimming.publish("t", "status", { n });

    const late = await client(fixture);
    const frames = await late.subscribe("t", first.id);
    expect(frames[0]).toMatchObject({ type: "error", code: "events_trimmed", session_id: "t" });
    const replayed = ns(frames.slice(1)) as number[];
    expect(replayed.length).toBeGreaterThanOrEqual(10);
    expect(replayed.length).toBeLessThan(249);
    expect(replayed.at(-1)).toBe(249);
    expect(replayed).toEqual(Array.from({ length: replayed.length }, (_, i) => 250 - replayed.length + i));

    // A since that is still stored gets no such error.
    const fine = await client(fixture);
    const kept = await fine.subscribe("t", frames.at(-2)?.id as string);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ type: "event" });
  });

  it("with since, has no gap or duplicate while events keep coming and others watch live", async () => {
    const fixture = await hub();
    const live = await client(fixture);
    await live.subscribe("busy");
    const first = await fixture.bus.publish("busy", "status", { n: -1 });
    await Promise.all(Array.from({ length: 500 }, (_, n) => fixture.bus.publish("busy", "status", { backlog: n })));
    let publishing = true;
    const pump = (async () => {
      for (let n = 0; publishing || n < 50; n++) await fixture.bus.publish("busy", "status", { n });
    })();
    const latecomers: TestClient[] = [];
    for (let i = 0; i < 3; i++) {
      const latecomer = await client(fixture);
      await latecomer.subscribe("busy", first.id);
      latecomers.push(latecomer);
    }
    publishing = false;
    await pump;
    const stored = (await fixture.redis.xrange(fixture.bus.streamKey("busy"), "-", "+")).map(([id]) => id);
    for (const latecomer of latecomers) {
      await waitUntil(() => latecomer.frames.filter((frame) => frame.type === "event").length >= stored.length - 1, 5000, "replay");
      expect(latecomer.frames.filter((frame) => frame.type === "event").map((frame) => frame.id)).toEqual(stored.slice(1));
    }
    const liveEvents = (): Frame[] => live.frames.filter((frame) => frame.type === "event");
    await waitUntil(() => liveEvents().length >= stored.length, 5000, "live frames");
    expect(liveEvents().map((frame) => frame.id)).toEqual(stored);
  });

  it("shares one bus subscription per session among all local clients", async () => {
    const fixture = await hub();
    let busSubscriptions = 0;
    let busDeliveries = 0;
    const realSubscribe = fixture.bus.subscribe.bind(fixture.bus);
    fixture.bus.subscribe = (sessionId, listener, options) => {
      busSubscriptions++;
      return realSubscribe(
        sessionId,
        (...event) => {
          busDeliveries++;
          return listener(...event);
        },
        options,
      );
    };
    const clients = await Promise.all(Array.from({ length: 300 }, () => client(fixture)));
    await Promise.all(clients.map((c) => c.subscribe("crowd")));
    expect(busSubscriptions).toBe(1);
    expect(fixture.hub.sessionCount).toBe(1);
    await fixture.bus.publish("crowd", "status", { text: "hello everyone" });
    const frames = await Promise.all(clients.map((c) => c.next()));
    expect(frames.every((frame) => (frame.data as { text: string }).text === "hello everyone")).toBe(true);
    // One delivery from the bus fans out to all 300 in the hub.
    expect(busDeliveries).toBe(1);
  });

  it("stops sending a session's events after unsubscribe, and drops the bus subscription after the last client", async () => {
    const fixture = await hub();
    const a = await client(fixture);
    const b = await client(fixture);
    await a.subscribe("s");
    await b.subscribe("s");
    a.send({ type: "unsubscribe", session_id: "s" });
    expect(await a.next()).toEqual({ type: "unsubscribed", session_id: "s" });
    await fixture.bus.publish("s", "status", { n: 1 });
    expect(ns([await b.next()])).toEqual([1]);
    await a.expectSilence(100);
    b.socket.terminate();
    await waitUntil(() => fixture.hub.sessionCount === 0, 2000, "the session to be unwatched");
  });

  it("keeps a client's sessions apart", async () => {
    const fixture = await hub();
    const watcher = await client(fixture);
    await watcher.subscribe("one");
    await fixture.bus.publish("two", "status", { n: 2 });
    await fixture.bus.publish("one", "status", { n: 1 });
    const frame = await watcher.next();
    expect(frame).toMatchObject({ session_id: "one", data: { n: 1 } });
    await watcher.expectSilence(100);
  });
});

function compareIds(a: string, b: string): number {
  const [am, as] = a.split("-").map(Number);
  const [bm, bs] = b.split("-").map(Number);
  return am !== bm ? am - bm : as - bs;
}
