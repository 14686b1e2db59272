import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { InterruptBus, type InterruptBusOptions } from "../../src/bus/interrupt-bus.js";
import type { InterruptRequest } from "../../src/bus/types.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { waitFor } from "../support/gateway.js";
import { newRedisClient, testRedisUrl, uniquePrefix } from "../support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

/** An interrupt bus with its own connections, as one process would have. */
function processBus(prefix: string, options: Partial<InterruptBusOptions> = {}): InterruptBus {
  const redis = newRedisClient();
  const bus = new InterruptBus({ redis, prefix, ...options });
  cleanups.push(async () => {
    await bus.close();
    redis.disconnect();
  });
  return bus;
}

/** A connection for a bus's pub/sub; with `reconnectAfterMs`, ioredis waits that long to reconnect. */
function subscriberConnection(reconnectAfterMs?: number): Redis {
  const connection =
    reconnectAfterMs === undefined
      ? newRedisClient()
      : new Redis({ ...redisOptionsFromUrl(testRedisUrl()), maxRetriesPerRequest: null, retryStrategy: () => reconnectAfterMs });
  cleanups.push(() => connection.disconnect());
  return connection;
}

function adminClient(): Redis {
  const admin = newRedisClient();
  cleanups.push(() => admin.disconnect());
  return admin;
}

async function within<T>(promise: Promise<T>, timeoutMs = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Close the connection without letting it reconnect; `connection.connect()` brings it back. */
async function dropConnection(connection: Redis): Promise<void> {
  const closed = new Promise((resolve) => connection.once("close", resolve));
  connection.disconnect();
  await within(closed);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const sessionsOf = (requests: InterruptRequest[]): string[] => requests.map((request) => request.sessionId);

/** Poll closely: some tests then check that nothing more arrives. */
const until = (condition: () => boolean, timeoutMs = 3000): Promise<boolean> => waitFor(condition, timeoutMs, "the expected deliveries", 5);

describe("InterruptBus", () => {
  it("reaches every process's listener, with text, hard and the inbox bound", async () => {
    const prefix = uniquePrefix("int");
    const workerA = processBus(prefix);
    const workerB = processBus(prefix);
    const gateway = processBus(prefix);
    const heardA: InterruptRequest[] = [];
    const heardB: InterruptRequest[] = [];
    await workerA.onInterrupt((request) => heardA.push(request));
    await workerB.onInterrupt((request) => heardB.push(request));

    await gateway.publish({ sessionId: "s1", text: "stop that", hard: true, beforeInboxId: 42 });
    await gateway.publish({ sessionId: "s2" });
    await until(() => heardA.length === 2 && heardB.length === 2);
    const expected = [{ sessionId: "s1", text: "stop that", hard: true, beforeInboxId: 42 }, { sessionId: "s2" }];
    expect(heardA).toEqual(expected);
    expect(heardB).toEqual(expected);
  });

  it("keeps buses with different prefixes apart", async () => {
    const mine = processBus(uniquePrefix("int"));
    const theirs = processBus(uniquePrefix("int"));
    const heard: InterruptRequest[] = [];
    await mine.onInterrupt((request) => heard.push(request));
    await theirs.publish({ sessionId: "elsewhere" });
    await mine.publish({ sessionId: "here" });
    await until(() => heard.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(heard.map((request) => request.sessionId)).toEqual(["here"]);
  });

  it("stops calling a listener that unsubscribed, and ignores unreadable messages", async () => {
    const prefix = uniquePrefix("int");
    const bus = processBus(prefix);
    const kept: InterruptRequest[] = [];
    const dropped: InterruptRequest[] = [];
    await bus.onInterrupt((request) => kept.push(request));
    const stop = await bus.onInterrupt((request) => dropped.push(request));
    await bus.publish({ sessionId: "s1" });
    await until(() => kept.length === 1 && dropped.length === 1);
    stop();
    const raw = newRedisClient();
    cleanups.push(() => raw.disconnect());
    await raw.publish(`${prefix}:interrupts`, "not json");
    await raw.publish(`${prefix}:interrupts`, JSON.stringify({ text: "no session" }));
    await bus.publish({ sessionId: "s2" });
    await until(() => kept.length === 2);
    expect(kept.map((request) => request.sessionId)).toEqual(["s1", "s2"]);
    expect(dropped).toHaveLength(1);
  });

  it("delivers a request published while its pub/sub connection was down, once, after it reconnects", async () => {
    const prefix = uniquePrefix("int");
    const admin = adminClient();
    const subscriber = subscriberConnection(300);
    const subscriberId = String(await subscriber.client("ID"));
    const bus = processBus(prefix, { subscriber });
    const publisher = processBus(prefix);
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));

    const closed = new Promise((resolve) => subscriber.once("close", resolve));
    await admin.client("KILL", "ID", subscriberId);
    await within(closed);
    await publisher.publish({ sessionId: "missed", text: "stop", hard: true });
    // Published while the subscriber was away: pub/sub alone would lose it.
    expect(subscriber.status).not.toBe("ready");

    await until(() => heard.length === 1);
    await publisher.publish({ sessionId: "live" });
    await until(() => heard.length === 2);
    await sleep(100);
    // The caught-up request says how old it is (about the 300 ms the subscriber was away), so a
    // turn that began after it can tell; the live one needs no age.
    const [missed, live] = heard;
    expect(missed).toMatchObject({ sessionId: "missed", text: "stop", hard: true });
    expect(missed.ageMs).toBeGreaterThanOrEqual(150);
    expect(missed.ageMs).toBeLessThan(3000);
    expect(live).toEqual({ sessionId: "live" });
    expect(heard).toHaveLength(2);
  });

  it("delivers a request once when it is heard live and also read in a catch-up", async () => {
    const prefix = uniquePrefix("int");
    const admin = adminClient();
    const subscriber = subscriberConnection();
    const bus = processBus(prefix, { subscriber });
    const publisher = processBus(prefix);
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));
    await publisher.publish({ sessionId: "live-1" });
    await publisher.publish({ sessionId: "live-2" });
    await until(() => heard.length === 2);

    // Heard live before the drop: the catch-up after it must not deliver them again.
    await dropConnection(subscriber);
    await publisher.publish({ sessionId: "missed" });
    await within(subscriber.connect());
    await until(() => heard.length === 3);

    // A late live copy of a request the catch-up already delivered is skipped by its id.
    const logged = await admin.xrange(`${prefix}:interrupts:log`, "-", "+");
    const missedId = logged[2][0];
    await admin.publish(`${prefix}:interrupts`, JSON.stringify({ id: missedId, sessionId: "missed" }));
    await publisher.publish({ sessionId: "after" });
    await until(() => heard.length === 4);
    await sleep(100);
    expect(sessionsOf(heard)).toEqual(["live-1", "live-2", "missed", "after"]);
  });

  it("keeps publish order when live requests and a catch-up overlap", async () => {
    const prefix = uniquePrefix("int");
    const subscriber = subscriberConnection();
    const bus = processBus(prefix, { subscriber });
    const publisher = processBus(prefix);
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));
    const expected: string[] = [];
    const publish = async (from: number, to: number): Promise<void> => {
      for (let n = from; n < to; n++) {
        expected.push(`s${n}`);
        await publisher.publish({ sessionId: `s${n}` });
      }
    };

    await publish(0, 5);
    await until(() => heard.length === 5);
    await dropConnection(subscriber);
    await publish(5, 15);
    // Keep publishing while the connection comes back, so live requests arrive during the catch-up.
    const reconnected = subscriber.connect();
    await publish(15, 45);
    await within(reconnected);
    await publish(45, 50);
    await until(() => heard.length === 50, 5000);
    await sleep(100);
    expect(sessionsOf(heard)).toEqual(expected);
  });

  it("does not deliver, after a reconnect, a request older than the catch-up window", async () => {
    const prefix = uniquePrefix("int");
    const admin = adminClient();
    const subscriber = subscriberConnection();
    const bus = processBus(prefix, { subscriber, catchUpWindowMs: 1000 });
    const publisher = processBus(prefix);
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));

    await dropConnection(subscriber);
    await publisher.publish({ sessionId: "stale" });
    await sleep(1500);
    await publisher.publish({ sessionId: "fresh" });
    // The stale request is still in the log: only the window keeps it from being delivered.
    expect(await admin.xlen(`${prefix}:interrupts:log`)).toBe(2);
    await within(subscriber.connect());
    await until(() => heard.length === 1);
    await publisher.publish({ sessionId: "live" });
    await until(() => heard.length === 2);
    await sleep(100);
    expect(sessionsOf(heard)).toEqual(["fresh", "live"]);
  });

  it("does not deliver, after a reconnect, what was published before it subscribed", async () => {
    const prefix = uniquePrefix("int");
    const subscriber = subscriberConnection();
    const bus = processBus(prefix, { subscriber });
    const publisher = processBus(prefix);
    await publisher.publish({ sessionId: "earlier" });
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));

    await dropConnection(subscriber);
    await within(subscriber.connect());
    await publisher.publish({ sessionId: "later" });
    await until(() => heard.length === 1);
    await sleep(100);
    expect(sessionsOf(heard)).toEqual(["later"]);
  });

  it("publishes with no one listening, into a short log that expires", async () => {
    const prefix = uniquePrefix("int");
    const admin = adminClient();
    const publisher = processBus(prefix);
    await publisher.publish({ sessionId: "s1" });
    await publisher.publish({ sessionId: "s2", beforeInboxId: 7 });
    const logKey = `${prefix}:interrupts:log`;
    const entries = await admin.xrange(logKey, "-", "+");
    expect(entries.map(([, fields]) => JSON.parse(fields[1]) as InterruptRequest)).toEqual([
      { sessionId: "s1" },
      { sessionId: "s2", beforeInboxId: 7 },
    ]);
    const ttl = await admin.ttl(logKey);
    expect(ttl).toBeGreaterThan(60);
    expect(ttl).toBeLessThanOrEqual(90);
  });

  it("hears a request without a log id live, and ignores one whose id is not a stream id", async () => {
    const prefix = uniquePrefix("int");
    const bus = processBus(prefix);
    const heard: InterruptRequest[] = [];
    await bus.onInterrupt((request) => heard.push(request));
    const raw = adminClient();
    await raw.publish(`${prefix}:interrupts`, JSON.stringify({ id: "yesterday", sessionId: "bad-id" }));
    // A publisher that only uses pub/sub (no log) sends the bare request.
    await raw.publish(`${prefix}:interrupts`, JSON.stringify({ sessionId: "unlogged", text: "stop" }));
    await until(() => heard.length === 1);
    await sleep(50);
    expect(heard).toEqual([{ sessionId: "unlogged", text: "stop" }]);
  });
});
