// Redis stopped during ingress: accepted messages are recorded, nothing is lost, and they are
// processed: with in-process wake-ups (the default) by this process's workers at once, with a
// BullMQ job per message (the path of a process whose ingress runs no workers) once Redis is back.
// The test owns its Redis (never stops a shared one).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe.each([
  { wakeUps: "in memory", inProcessWakeUps: true },
  { wakeUps: "as BullMQ jobs", inProcessWakeUps: false },
])("Redis outage during ingress, wake-ups $wakeUps", ({ inProcessWakeUps }) => {
  const redisDir = mkdtempSync(join(tmpdir(), "sb-outage-redis-"));
  let redis: EmbeddedRedis;
  let gw: TestGateway;

  beforeAll(async () => {
    redis = await startEmbeddedRedis(redisDir);
    gw = await startTestGateway({ http: true, workers: true, inProcessWakeUps, env: { REDIS_URL: redis.url } });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
    rmSync(redisDir, { recursive: true, force: true });
  });

  it("records every message while Redis is down and answers them all once it is back", async () => {
    const ok = await gw.gateway.ingress.accept(inbound("outage", "before the outage"));
    if (ok.status !== "accepted") throw new Error("not accepted");
    await gw.gateway.ingress.waitForOutcome(ok.inboxId, 20_000);

    await redis.stop();
    const during = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const result = await gw.gateway.ingress.accept(inbound("outage", `during ${i}`));
      // The ack never hangs on a dead Redis: time is the behaviour, and the bound is far past an
      // ack's milliseconds, so only a wait on Redis trips it.
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(result.status).toBe("accepted");
      if (result.status === "accepted") {
        // In memory the wake-up needs no Redis; as a job it waits for the reconciler.
        expect(result.enqueued).toBe(inProcessWakeUps);
        during.push(result);
      }
    }
    const health = await fetch(`${gw.gateway.url}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { redis: string }).redis).toBe("down");

    redis = await startEmbeddedRedis(redisDir);
    for (const r of during) {
      if (r.status !== "accepted") continue;
      const outcome = await gw.gateway.ingress.waitForOutcome(r.inboxId, 60_000);
      expect(outcome.status).toBe("done");
    }
    const rows = await gw.gateway.store.getMessages(await gw.gateway.store.resolveTip(ok.sessionId));
    const users = rows.filter((m) => m.role === "user").map((m) => m.content);
    expect(users).toEqual(["before the outage", "during 0", "during 1", "during 2", "during 3", "during 4"]);
    expect(rows.filter((m) => m.role === "assistant")).toHaveLength(6);
    await waitFor(async () => (await fetch(`${gw.gateway.url}/health`)).status === 200, 10_000, "health ok again");
  }, 120_000);
});
