// The one pub/sub channel abstraction (lease wake-ups, rate-limit windows and thread memory use
// it) and the one place Redis names are built.
import type { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { familyMember, familyPattern, RedisKeys } from "../../src/bus/keys.js";
import { PubSubChannel } from "../../src/bus/pubsub-channel.js";
import { waitFor } from "../support/gateway.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

function client(): Redis {
  const created = newRedisClient();
  cleanups.push(() => created.disconnect());
  return created;
}

function channel(options: { name: string; family?: boolean; subscriber?: Redis; redis?: Redis }): { channel: PubSubChannel; heard: string[] } {
  const heard: string[] = [];
  const created = new PubSubChannel({ redis: options.redis ?? client(), subscriber: options.subscriber, name: options.name, family: options.family, onMessage: (m) => heard.push(m) });
  cleanups.push(() => created.close());
  return { channel: created, heard };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe("RedisKeys", () => {
  it("builds every name from the deployment's prefix, as the processes of a deployment expect", () => {
    const keys = new RedisKeys("sb");
    expect([keys.eventStream("s1"), keys.eventChannel("s1"), keys.interruptChannel, keys.interruptLog]).toEqual([
      "sb:events:s1",
      "sb:events:live:s1",
      "sb:interrupts",
      "sb:interrupts:log",
    ]);
    expect([keys.leaseReleased, keys.threadsChannel, keys.rateLimitsChannel]).toEqual(["sb:lease-released", "sb:threads", "sb:rate-limits"]);
    expect(familyMember(keys.leaseReleased, "conv-1")).toBe("sb:lease-released:conv-1");
    expect(familyPattern("a*b?[c]\\")).toBe("a\\*b\\?\\[c\\]\\\\:*");
  });
});

describe("PubSubChannel", () => {
  it("carries messages between processes on one channel; channels sharing a subscriber hear only their own", async () => {
    const prefix = uniquePrefix("pubsub");
    const shared = client();
    const threads = channel({ name: `${prefix}:threads`, subscriber: shared });
    const limits = channel({ name: `${prefix}:rate-limits`, subscriber: shared });
    const elsewhere = channel({ name: `${prefix}:threads` });
    await Promise.all([threads.channel.listen(), limits.channel.listen(), elsewhere.channel.listen()]);

    await elsewhere.channel.publish("T1:C1:1.1");
    await limits.channel.publish("window");
    await waitFor(() => threads.heard.length === 1 && limits.heard.length === 1 && elsewhere.heard.length === 1, 3_000, "messages");
    expect(threads.heard).toEqual(["T1:C1:1.1"]);
    expect(limits.heard).toEqual(["window"]);
    expect(elsewhere.heard).toEqual(["T1:C1:1.1"]);
  });

  it("hears every member of a family, and only that family", async () => {
    const family = `${uniquePrefix("pubsub")}*`;
    const mine = channel({ name: family, family: true });
    const other = channel({ name: `${family.slice(0, -1)}x`, family: true });
    await Promise.all([mine.channel.listen(), other.channel.listen()]);
    await mine.channel.publish("one", "conv:1");
    await other.channel.publish("two", "conv:2");
    await waitFor(() => mine.heard.length === 1 && other.heard.length === 1, 3_000, "members");
    await settle();
    expect(mine.heard).toEqual(["one"]);
    expect(other.heard).toEqual(["two"]);
  });

  it("closing leaves a shared connection subscribed for its other users, and closes an owned one", async () => {
    const name = `${uniquePrefix("pubsub")}:c`;
    const shared = client();
    const leaving = channel({ name, subscriber: shared });
    const staying = channel({ name: `${name}2`, subscriber: shared });
    const owner = client();
    const owning = channel({ name, redis: owner });
    await Promise.all([leaving.channel.listen(), staying.channel.listen(), owning.channel.listen()]);

    await leaving.channel.close();
    await owning.channel.close();
    await owner.publish(name, "after close");
    await owner.publish(`${name}2`, "still here");
    await waitFor(() => staying.heard.length === 1, 3_000, "the other user's message");
    await settle();
    expect(leaving.heard).toEqual([]);
    expect(owning.heard).toEqual([]);
    expect(shared.status).toBe("ready");
    expect(await owner.call("PUBSUB", "NUMSUB", name, `${name}2`)).toEqual([name, 0, `${name}2`, 1]);
  });
});
