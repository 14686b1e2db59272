// The threads the bot takes part in, shared by every process: loaded from the sessions' keys at
// start-up, and the threads one process remembers later heard by the others, those of one pass
// of the event loop in one message.
import { afterEach, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { THREADED_SESSION_PREFIXES, threadKeyForSessionKey } from "../../src/adapters/thread-keys.js";
import { SharedThreadMemory, threadKeysIn } from "../../src/bus/thread-memory.js";
import type { SessionDB } from "../../src/state/index.js";
import { waitFor } from "../support/gateway.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";
import { tempStore } from "../state/helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

function openStore(): SessionDB {
  const temp = tempStore("sb-threads");
  cleanups.push(() => temp.cleanup());
  return temp.open();
}

/** One process's thread memory, on its own connections. */
async function processMemory(channel: string, store: SessionDB): Promise<SharedThreadMemory> {
  const redis = newRedisClient();
  const subscriber = newRedisClient();
  const memory = await SharedThreadMemory.start({ store, redis, subscriber, channel, prefixes: THREADED_SESSION_PREFIXES, threadKeyOf: threadKeyForSessionKey });
  cleanups.push(async () => {
    await memory.close();
    redis.disconnect();
    subscriber.disconnect();
  });
  return memory;
}

/** Every message published on the channel, as a third process would hear it. */
async function listen(channel: string): Promise<string[]> {
  const heard: string[] = [];
  const subscriber: Redis = newRedisClient();
  cleanups.push(() => subscriber.disconnect());
  subscriber.on("message", (_channel: string, message: string) => heard.push(message));
  await subscriber.subscribe(channel);
  return heard;
}

describe("SharedThreadMemory", () => {
  it("loads the threads of stored sessions at start-up", async () => {
    const store = openStore();
    await store.ensureSessionForKey("slack:T1:C1:111.1", "s1", { source: "slack" });
    await store.ensureSessionForKey("discord:G1:C1:T9", "s2", { source: "discord" });
    await store.ensureSessionForKey("webhook:bench:chat-1", "s3", { source: "webhook" });
    const memory = await processMemory(`${uniquePrefix("threads")}:threads`, store);
    expect(memory.has(threadKeyForSessionKey("slack:T1:C1:111.1") as string)).toBe(true);
    expect(memory.has(threadKeyForSessionKey("discord:G1:C1:T9") as string)).toBe(true);
    expect(memory.has("T1:C1:222.2")).toBe(false);
  });

  it("announces the threads first remembered in one pass in one message, each once, and the other process hears them all", async () => {
    const channel = `${uniquePrefix("threads")}:threads`;
    const heard = await listen(channel);
    const first = await processMemory(channel, openStore());
    const second = await processMemory(channel, openStore());

    // Remembered in one pass, one of them twice.
    for (const key of ["T1:C1:1.1", "T1:C1:2.2", "T1:C1:1.1", "T1:C2:3.3"]) first.remember(key);
    await waitFor(() => heard.length > 0, 3000, "the announcement", 10);
    await waitFor(() => ["T1:C1:1.1", "T1:C1:2.2", "T1:C2:3.3"].every((key) => second.has(key)), 3000, "the second process to hear every thread", 10);
    expect(heard).toEqual([JSON.stringify(["T1:C1:1.1", "T1:C1:2.2", "T1:C2:3.3"])]);

    // A thread it already knows is not announced again; a later pass's new one goes in a message of its own.
    first.remember("T1:C1:2.2");
    first.remember("T1:C3:4.4");
    await waitFor(() => second.has("T1:C3:4.4"), 3000, "the later thread", 10);
    expect(heard).toEqual([JSON.stringify(["T1:C1:1.1", "T1:C1:2.2", "T1:C2:3.3"]), JSON.stringify(["T1:C3:4.4"])]);
    expect(second.has("T1:C9:9.9")).toBe(false);
  });

  it("hears a single key from a process of an earlier version, which announces one thread per message", async () => {
    const channel = `${uniquePrefix("threads")}:threads`;
    const memory = await processMemory(channel, openStore());
    const publisher = newRedisClient();
    cleanups.push(() => publisher.disconnect());
    await publisher.publish(channel, "T7:C7:7.7");
    await waitFor(() => memory.has("T7:C7:7.7"), 3000, "the old-style announcement", 10);
  });

  it("reads an announcement as a JSON array of keys, anything else as one key", () => {
    expect(threadKeysIn(JSON.stringify(["a:b:c", "d:e:f"]))).toEqual(["a:b:c", "d:e:f"]);
    expect(threadKeysIn("T1:C1:1.1")).toEqual(["T1:C1:1.1"]);
    expect(threadKeysIn("[not json")).toEqual(["[not json"]);
    expect(threadKeysIn(JSON.stringify(["a", 3, null, "b"]))).toEqual(["a", "b"]);
  });
});
