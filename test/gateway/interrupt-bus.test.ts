import { afterEach, describe, expect, it } from "vitest";
import { InterruptBus } from "../../src/gateway/interrupt-bus.js";
import type { InterruptRequest } from "../../src/gateway/bus-types.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

/** An interrupt bus with its own connections, as one process would have. */
function processBus(prefix: string): InterruptBus {
  const redis = newRedisClient();
  const bus = new InterruptBus({ redis, prefix });
  cleanups.push(async () => {
    await bus.close();
    redis.disconnect();
  });
  return bus;
}

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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
});
