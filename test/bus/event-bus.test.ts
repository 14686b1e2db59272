import { afterEach, describe, expect, it, vi } from "vitest";
import type { Redis } from "ioredis";
import { EventBus } from "../../src/bus/event-bus.js";
import type { GatewayEvent } from "../../src/gateway/types.js";
import { deletePrefix, newRedisClient, uniquePrefix } from "../support/redis.js";
import { waitFor } from "../support/gateway.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

/** A bus with its own connections, as one process would have. */
function processBus(prefix: string, options: { subscriber?: Redis; ttlSeconds?: number } = {}): { bus: EventBus; redis: Redis } {
  const redis = newRedisClient();
  const bus = new EventBus({ redis, prefix, ...options });
  cleanups.push(async () => {
    await bus.close();
    redis.disconnect();
  });
  return { bus, redis };
}

function setup(): { prefix: string; admin: Redis } {
  const prefix = uniquePrefix("bus");
  const admin = newRedisClient();
  cleanups.push(async () => {
    await deletePrefix(admin, prefix);
    admin.disconnect();
  });
  return { prefix, admin };
}

function collector(): { events: GatewayEvent[]; listener: (event: GatewayEvent) => void; waitFor(count: number, timeoutMs?: number): Promise<GatewayEvent[]> } {
  const events: GatewayEvent[] = [];
  let wake: (() => void) | null = null;
  return {
    events,
    listener: (event) => {
      events.push(event);
      wake?.();
    },
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`got ${events.length} of ${count} events within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 100));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return events;
    },
  };
}

function idsOf(events: GatewayEvent[]): string[] {
  return events.map((event) => event.id);
}

async function streamIds(admin: Redis, bus: EventBus, sessionId: string): Promise<string[]> {
  return (await admin.xrange(bus.streamKey(sessionId), "-", "+")).map(([id]) => id);
}

describe("EventBus", () => {
  it("gives each event its stream id, increasing per session, and keeps kind, data and time", async () => {
    const { prefix, admin } = setup();
    const { bus } = processBus(prefix);
    const before = Date.now();
    const first = await bus.publish("s1", "turn.started", { turn: 1 });
    const second = await bus.publish("s1", "status", { text: "hel" });
    expect(first).toMatchObject({ session_id: "s1", kind: "turn.started", data: { turn: 1 } });
    expect(first.ts).toBeGreaterThanOrEqual(before);
    expect(first.id).toMatch(/^\d+-\d+$/);
    expect(await streamIds(admin, bus, "s1")).toEqual([first.id, second.id]);
    const replayed = [];
    for await (const page of bus.replay("s1", { ms: 0, seq: 0 })) replayed.push(...page);
    expect(replayed).toEqual([first, second]);
  });

  it("publishes a stored event's message as its id and its JSON body, whose data crosses to Redis once", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    const raw = newRedisClient();
    cleanups.push(async () => raw.disconnect());
    const messages: string[] = [];
    raw.on("pmessage", (_pattern: string, _channel: string, message: string) => messages.push(message));
    await raw.psubscribe(`${prefix}*`);
    const data = { text: 'quotes " and \\ back, unicode é 🙂, a newline\n', inbox_ids: [7] };
    const event = await bus.publish("s \"odd\"", "turn.completed", data);
    await waitFor(() => messages.length > 0 || null, 5_000, "the published message", 5);
    expect(messages).toEqual([`${event.id} ${JSON.stringify({ session_id: 's "odd"', kind: "turn.completed", data, ts: event.ts })}`]);
  });

  it("delivers live events of a session in publish order to subscribers in two processes", async () => {
    const { prefix, admin } = setup();
    const one = processBus(prefix);
    const two = processBus(prefix);
    const publishers = Array.from({ length: 8 }, () => processBus(prefix));
    const seenByOne = collector();
    const seenByTwo = collector();
    await one.bus.subscribe("s", seenByOne.listener);
    await two.bus.subscribe("s", seenByTwo.listener);
    // Eight publishers race on one session: every process must still see the stream's order.
    await Promise.all(
      publishers.map(async (publisher, from) => {
        for (let n = 0; n < 40; n++) await publisher.bus.publish("s", "status", { from, n });
      }),
    );
    const stored = await streamIds(admin, one.bus, "s");
    expect(stored).toHaveLength(320);
    expect(idsOf(await seenByOne.waitFor(320))).toEqual(stored);
    expect(idsOf(await seenByTwo.waitFor(320))).toEqual(stored);
    const fromFirst = seenByOne.events.filter((event) => event.data.from === 0).map((event) => event.data.n);
    expect(fromFirst).toEqual(Array.from({ length: 40 }, (_, n) => n));
  });

  it("keeps sessions apart", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    const seen = collector();
    await bus.subscribe("mine", seen.listener);
    await bus.publish("other", "status", { text: "not for you" });
    await bus.publish("mine", "status", { text: "for you" });
    await seen.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.events.map((event) => event.data.text)).toEqual(["for you"]);
  });

  it("without since, delivers only events published after subscribing", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    await bus.publish("s", "status", { n: 0 });
    const seen = collector();
    await bus.subscribe("s", seen.listener);
    await bus.publish("s", "status", { n: 1 });
    await seen.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.events.map((event) => event.data.n)).toEqual([1]);
  });

  it("liveOnly delivers the events published after subscribing, in order, without reading the stream", async () => {
    const { prefix } = setup();
    const { bus, redis } = processBus(prefix);
    await bus.publish("s", "status", { n: 0 });
    const streamReads: string[] = [];
    const xrange = redis.xrange.bind(redis);
    const xrevrange = redis.xrevrange.bind(redis);
    redis.xrange = ((...args: Parameters<typeof xrange>) => (streamReads.push("xrange"), xrange(...args))) as typeof redis.xrange;
    redis.xrevrange = ((...args: Parameters<typeof xrevrange>) => (streamReads.push("xrevrange"), xrevrange(...args))) as typeof redis.xrevrange;
    const seen = collector();
    const off = await bus.subscribe("s", seen.listener, { liveOnly: true });
    for (let n = 1; n <= 3; n++) await bus.publish("s", "status", { n });
    await seen.waitFor(3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    off();
    expect(seen.events.map((event) => event.data.n)).toEqual([1, 2, 3]);
    expect(streamReads).toEqual([]);
    // The default subscribe reads the stream (its newest id, then what came after it).
    await bus.subscribe("s", () => undefined);
    expect(streamReads).toEqual(["xrevrange", "xrange"]);
  });

  it("with since, replays exactly the events after it, then live ones", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    const published: GatewayEvent[] = [];
    for (let n = 0; n < 5; n++) published.push(await bus.publish("s", n % 2 ? "status" : "status", { n }));
    const seen = collector();
    await bus.subscribe("s", seen.listener, { since: published[1].id });
    expect(idsOf(seen.events)).toEqual(idsOf(published.slice(2)));
    published.push(await bus.publish("s", "turn.completed", { n: 5 }));
    expect(idsOf(await seen.waitFor(4))).toEqual(idsOf(published.slice(2)));
  });

  it("with since, has no gap and no duplicate while another process keeps publishing", async () => {
    const { prefix, admin } = setup();
    const publisher = processBus(prefix);
    const { bus } = processBus(prefix);
    const first = await publisher.bus.publish("s", "status", { n: -1 });
    // A backlog to replay, so live events arrive while the replay is still being read.
    await Promise.all(Array.from({ length: 1000 }, (_, n) => publisher.bus.publish("s", "status", { backlog: n })));
    let publishing = true;
    const pumps = Array.from({ length: 3 }, async (_, lane) => {
      for (let n = 0; publishing || n < 50; n++) await publisher.bus.publish("s", "status", { lane, n });
    });
    // Subscribe at several moments while events keep coming.
    const subscribers = [];
    for (let i = 0; i < 5; i++) {
      const seen = collector();
      await bus.subscribe("s", seen.listener, { since: first.id });
      subscribers.push(seen);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    publishing = false;
    await Promise.all(pumps);
    const stored = (await streamIds(admin, bus, "s")).slice(1);
    for (const seen of subscribers) expect(idsOf(await seen.waitFor(stored.length))).toEqual(stored);
  });

  it("replays long histories in pages, in order", async () => {
    const { prefix } = setup();
    const { bus, redis } = processBus(prefix);
    const key = bus.streamKey("long");
    const pipeline = redis.pipeline();
    for (let n = 0; n < 1200; n++) pipeline.xadd(key, "*", "kind", "status", "data", JSON.stringify({ n }), "ts", String(Date.now()));
    await pipeline.exec();
    const seen = collector();
    await bus.subscribe("long", seen.listener, { since: "0-0" });
    expect(seen.events.map((event) => event.data.n)).toEqual(Array.from({ length: 1200 }, (_, n) => n));
  });

  it("shares one Redis channel subscription among local subscribers of a session and drops it after the last", async () => {
    const { prefix, admin } = setup();
    const { bus } = processBus(prefix);
    const a = collector();
    const b = collector();
    const stopA = await bus.subscribe("s", a.listener);
    const stopB = await bus.subscribe("s", b.listener);
    const channel = `${prefix}:events:live:s`;
    const subscribers = async (): Promise<number> => Number(((await admin.pubsub("NUMSUB", channel)) as [string, number])[1]);
    expect(await subscribers()).toBe(1);
    await bus.publish("s", "status", { n: 1 });
    await a.waitFor(1);
    await b.waitFor(1);
    stopA();
    await bus.publish("s", "status", { n: 2 });
    await b.waitFor(2);
    expect(a.events).toHaveLength(1);
    stopB();
    await expect.poll(subscribers, { timeout: 2000 }).toBe(0);
  });

  it("a listener that throws does not stop delivery to the others", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    const seen = collector();
    await bus.subscribe("s", () => {
      throw new Error("bad listener");
    });
    await bus.subscribe("s", seen.listener);
    await bus.publish("s", "status", { n: 1 });
    await bus.publish("s", "status", { n: 2 });
    expect((await seen.waitFor(2)).map((event) => event.data.n)).toEqual([1, 2]);
  });

  it("after its pub/sub connection drops, delivers what was published meanwhile, in order, then live ones", async () => {
    const { prefix, admin } = setup();
    const subscriber = newRedisClient();
    cleanups.push(() => subscriber.disconnect());
    const clientId = String(await subscriber.client("ID"));
    const { bus } = processBus(prefix, { subscriber });
    const publisher = processBus(prefix);
    const seen = collector();
    await bus.subscribe("s", seen.listener);
    await publisher.bus.publish("s", "status", { n: 0 });
    await seen.waitFor(1);

    const closed = new Promise((resolve) => subscriber.once("close", resolve));
    await admin.client("KILL", "ID", clientId);
    await closed;
    for (let n = 1; n <= 5; n++) await publisher.bus.publish("s", "status", { n });
    // These were published while the subscriber was away: pub/sub alone would lose them.
    expect(subscriber.status).not.toBe("ready");

    await seen.waitFor(6);
    await publisher.bus.publish("s", "status", { n: 6 });
    await seen.waitFor(7);
    expect(seen.events.map((event) => event.data.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(idsOf(seen.events)).toEqual(await streamIds(admin, bus, "s"));
  });

  it("bounds each session's stream by length and expires it", async () => {
    const { prefix, admin } = setup();
    const redis = newRedisClient();
    const bus = new EventBus({ redis, prefix, maxLenPerSession: 10, ttlSeconds: 600 });
    cleanups.push(async () => {
      await bus.close();
      redis.disconnect();
    });
    for (let n = 0; n < 300; n++) await bus.publish("s", "status", { n });
    const length = await admin.xlen(bus.streamKey("s"));
    expect(length).toBeLessThan(300);
    expect(length).toBeGreaterThanOrEqual(10);
    const ttl = await admin.ttl(bus.streamKey("s"));
    expect(ttl).toBeGreaterThan(500);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it("sets a stream's TTL once per refresh window, and again on a stream that is gone", async () => {
    const { prefix, admin } = setup();
    const { bus } = processBus(prefix, { ttlSeconds: 600 });
    const key = bus.streamKey("s");
    await bus.publish("s", "turn.started", {});
    expect(await admin.ttl(key)).toBeGreaterThan(500);
    // Within the window the next events do not EXPIRE again (an older TTL stays as it is) ...
    await admin.expire(key, 100);
    await bus.publish("s", "status", { n: 1 });
    await bus.publish("s", "turn.completed", { final_response: "done" });
    const ttl = await admin.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(100);
    // ... but a stream that disappeared meanwhile is created again with its TTL, never without.
    await admin.del(key);
    await bus.publish("s", "message.queued", { n: 2 });
    expect(await admin.xlen(key)).toBe(1);
    expect(await admin.ttl(key)).toBeGreaterThan(500);
  });

  it("stores the events published in one event-loop turn, of any session, with one script run", async () => {
    const { prefix, admin } = setup();
    const { bus, redis } = processBus(prefix);
    const live = collector();
    await bus.subscribe("a", live.listener);
    // The script is loaded by a first event; then every script command this client sends is counted.
    await bus.publish("warm-up", "turn.started", {});
    const runs: string[] = [];
    const send = redis.sendCommand.bind(redis);
    vi.spyOn(redis, "sendCommand").mockImplementation((command, stream) => {
      if (/^eval/i.test(command.name)) runs.push(command.name);
      return send(command, stream);
    });
    const published = await Promise.all(
      ["a", "b", "c", "a", "b", "c"].map((session, n) => bus.publish(session, n < 3 ? "turn.started" : "turn.completed", { n })),
    );
    await live.waitFor(2);
    expect(runs).toEqual(["evalsha"]);
    for (const session of ["a", "b", "c"]) {
      const [started, completed] = published.filter((event) => event.session_id === session);
      expect(await streamIds(admin, bus, session)).toEqual([started.id, completed.id]);
    }
    expect(live.events.map((e) => e.data.n)).toEqual([0, 3]);
  });

  describe("streamed text (delta)", () => {
    function deltas(bus: EventBus, sessionId: string, words: string[], from = 0): void {
      let offset = from;
      for (const word of words) {
        // The turns' path: nothing to wait for, no promise.
        bus.publishLive(sessionId, "delta", { text: word, offset, turn_session_id: sessionId, inbox_ids: [1] });
        offset += word.length;
      }
    }

    it("is published live, coalesced into one frame per interval, and never stored", async () => {
      const { prefix, admin } = setup();
      const { bus } = processBus(prefix);
      const live = collector();
      await bus.subscribe("s", live.listener);
      const started = await bus.publish("s", "turn.started", { inbox_ids: [1] });
      deltas(bus, "s", ["Echo:", " one", " two"]);
      await live.waitFor(2);
      // publish() of a delta takes the same path.
      void bus.publish("s", "delta", { text: " three", offset: "Echo: one two".length, turn_session_id: "s", inbox_ids: [1] });
      // Pending when the turn ends: dropped, since the end event carries the whole text.
      await bus.publish("s", "turn.completed", { final_response: "Echo: one two three", inbox_ids: [1] });
      await live.waitFor(3);
      await new Promise((resolve) => setTimeout(resolve, 100)); // nothing else may come
      expect(live.events.map((e) => [e.kind, e.data.text, e.data.offset])).toEqual([
        ["turn.started", undefined, undefined],
        ["delta", "Echo: one two", 0],
        ["turn.completed", undefined, undefined],
      ]);
      // The frame keeps the turn's fields and goes out with the id of the stored event before it.
      expect(live.events[1]).toMatchObject({ id: started.id, session_id: "s", data: { turn_session_id: "s", inbox_ids: [1] } });
      const stored = await admin.xrange(bus.streamKey("s"), "-", "+");
      expect(stored.map(([, fields]) => fields[1])).toEqual(["turn.started", "turn.completed"]);
    });

    it("goes out before a stored event published after it, and a new segment starts a new frame", async () => {
      const { prefix } = setup();
      const { bus } = processBus(prefix);
      const live = collector();
      await bus.subscribe("s", live.listener);
      deltas(bus, "s", ["Let", " me", " look."]);
      const tool = await bus.publish("s", "tool.started", { name: "clock" });
      deltas(bus, "s", ["It is", " noon"]);
      deltas(bus, "s", ["Anew"]); // offset 0 again: another model call
      await live.waitFor(4);
      expect(live.events.map((e) => [e.kind, e.data.text ?? e.data.name, e.data.offset])).toEqual([
        ["delta", "Let me look.", 0],
        ["tool.started", "clock", undefined],
        ["delta", "It is noon", 0],
        ["delta", "Anew", 0],
      ]);
      expect(live.events[2].id).toBe(tool.id);
    });

    it("publishLive refuses a kind that is stored", () => {
      const { prefix } = setup();
      const { bus } = processBus(prefix);
      expect(() => bus.publishLive("s", "turn.completed", { final_response: "x" })).toThrow(/stored/);
    });

    it("sends at most one frame per interval for a steady stream", async () => {
      const { prefix } = setup();
      const redis = newRedisClient();
      const bus = new EventBus({ redis, prefix, deltaIntervalMs: 50 });
      cleanups.push(async () => {
        await bus.close();
        redis.disconnect();
      });
      const live = collector();
      await bus.subscribe("s", live.listener);
      const began = Date.now();
      let text = "";
      for (let n = 0; n < 100; n++) {
        const word = ` w${n}`;
        deltas(bus, "s", [word], text.length);
        text += word;
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      // Until the last frame carried the last word (the frames' count is weighed against this time).
      await waitFor(() => live.events.map((e) => e.data.text).join("") === text || null, 5_000, "the whole text", 5);
      const elapsed = Date.now() - began;
      expect(live.events.map((e) => e.data.text).join("")).toBe(text);
      expect(live.events.length).toBeGreaterThan(1);
      expect(live.events.length).toBeLessThanOrEqual(Math.ceil(elapsed / 50) + 1);
      const offsets = live.events.map((e) => e.data.offset);
      expect(offsets[0]).toBe(0);
      for (let i = 1; i < live.events.length; i++) expect(offsets[i]).toBe(Number(offsets[i - 1]) + String(live.events[i - 1].data.text).length);
    });
  });

  it("refuses a since that is not an event id", async () => {
    const { prefix } = setup();
    const { bus } = processBus(prefix);
    await expect(bus.subscribe("s", () => undefined, { since: "yesterday" })).rejects.toThrow(/not an event id/);
  });
});
