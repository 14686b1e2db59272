import { afterEach, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { RedisLeaseNotifier } from "../../src/bus/lease-notifier.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";
import { until } from "../state/helpers.js";

const clients: Redis[] = [];
const notifiers: RedisLeaseNotifier[] = [];
afterEach(async () => {
  for (const notifier of notifiers.splice(0)) await notifier.close();
  for (const client of clients.splice(0)) client.disconnect();
});

function client(): Redis {
  const created = newRedisClient();
  clients.push(created);
  return created;
}

async function notifier(prefix: string, subscriber: Redis | null = null): Promise<RedisLeaseNotifier> {
  const created = new RedisLeaseNotifier(client(), subscriber, prefix);
  notifiers.push(created);
  await created.ready();
  return created;
}

describe("RedisLeaseNotifier", () => {
  it("delivers a release published by one process to the listeners of another", async () => {
    const prefix = uniquePrefix("lease");
    const sender = await notifier(prefix);
    const receiver = await notifier(prefix);
    const heard: string[] = [];
    receiver.onRelease((id) => heard.push(id));
    sender.publishRelease("conv:1");
    sender.publishRelease("conv*[2]");
    await until(() => heard.length === 2, 3000, "both releases");
    expect(heard).toEqual(["conv:1", "conv*[2]"]);
  });

  it("sends the releases of one pass of the event loop as one message, and a release just before close still goes out", async () => {
    const prefix = uniquePrefix("lease");
    const publisher = client();
    const sender = new RedisLeaseNotifier(publisher, null, prefix);
    notifiers.push(sender);
    await sender.ready();
    const receiver = await notifier(prefix);
    const heard: string[] = [];
    receiver.onRelease((id) => heard.push(id));
    const published: string[] = [];
    const original = publisher.publish.bind(publisher);
    publisher.publish = ((channel: string, message: string) => {
      published.push(message);
      return original(channel, message);
    }) as typeof publisher.publish;
    for (const id of ["a", "b", "a", "c"]) sender.publishRelease(id);
    await until(() => heard.length === 3, 3000, "the three releases");
    expect(heard).toEqual(["a", "b", "c"]);
    // One message: the sender's tag, then the ids.
    expect(published).toHaveLength(1);
    expect(published[0].split("\n").slice(1)).toEqual(["a", "b", "c"]);
    sender.publishRelease("last");
    await sender.close();
    await until(() => heard.length === 4, 3000, "the release before close");
    expect(heard[3]).toBe("last");
  });

  it("does not hear its own releases back (its stores woke their waiters already); another notifier does", async () => {
    const prefix = uniquePrefix("lease");
    const one = await notifier(prefix);
    const other = await notifier(prefix);
    const heardByOne: string[] = [];
    const heardByOther: string[] = [];
    one.onRelease((id) => heardByOne.push(id));
    other.onRelease((id) => heardByOther.push(id));
    one.publishRelease("from-one");
    other.publishRelease("from-other");
    await until(() => heardByOne.length === 1 && heardByOther.length === 1, 3000, "each the other's release");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heardByOne).toEqual(["from-other"]);
    expect(heardByOther).toEqual(["from-one"]);
  });

  it("hears only its own prefix, even when the prefix contains glob characters", async () => {
    const starPrefix = `${uniquePrefix("lease")}*`;
    const otherPrefix = starPrefix.slice(0, -1) + "x";
    const mine = await notifier(starPrefix);
    const other = await notifier(otherPrefix);
    const heard: string[] = [];
    mine.onRelease((id) => heard.push(`mine:${id}`));
    other.onRelease((id) => heard.push(`other:${id}`));
    // Each prefix's releases come from a second notifier on it (a notifier ignores its own).
    (await notifier(otherPrefix)).publishRelease("a");
    (await notifier(starPrefix)).publishRelease("b");
    await until(() => heard.length >= 2, 3000, "releases");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(heard.sort()).toEqual(["mine:b", "other:a"]);
  });

  it("stops calling a listener after unsubscribe and after close; a shared subscriber stays usable", async () => {
    const prefix = uniquePrefix("lease");
    const shared = client();
    const sender = await notifier(prefix);
    const receiver = await notifier(prefix, shared);
    const heard: string[] = [];
    const unsubscribe = receiver.onRelease((id) => heard.push(id));
    sender.publishRelease("one");
    await until(() => heard.length === 1, 3000, "first release");
    unsubscribe();
    const again: string[] = [];
    receiver.onRelease((id) => again.push(id));
    await receiver.close();
    sender.publishRelease("two");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard).toEqual(["one"]);
    expect(again).toEqual([]);
    // The shared connection was not closed by the notifier.
    expect(shared.status).toBe("ready");
  });
});
