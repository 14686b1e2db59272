import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createMetrics, eventLoopRole, type EventLoopRole } from "../../src/gateway/metrics.js";

/** The counter's value for `role`, as a scrape reads it. */
async function busySeconds(metrics: ReturnType<typeof createMetrics>, role: EventLoopRole): Promise<number> {
  const text = await metrics.registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`switchboard_event_loop_busy_seconds_total{loop="${role}"} `));
  expect(line, text).toBeDefined();
  return Number(line!.slice(line!.lastIndexOf(" ") + 1));
}

describe("switchboard_event_loop_busy_seconds_total", () => {
  it("counts the time the loop runs code and not the time it waits, under what the loop runs", async () => {
    const metrics = createMetrics("workers");
    await sleep(1);
    const before = await busySeconds(metrics, "workers");

    // 60 ms of code without a pause: all of it busy.
    const until = performance.now() + 60;
    while (performance.now() < until) {
      // the loop is held here, as by a long turn
    }
    const afterWork = await busySeconds(metrics, "workers");
    expect(afterWork - before).toBeGreaterThanOrEqual(0.059);

    // 300 ms of waiting on a timer: at most half of it busy (the scrapes themselves run code, and
    // a loaded machine may stretch them), where busy time counted as wall time would be all of it.
    await sleep(300);
    const afterWait = await busySeconds(metrics, "workers");
    expect(afterWait - afterWork).toBeLessThan(0.15);
    expect(afterWait).toBeGreaterThanOrEqual(afterWork);
  });

  it("names the loop by what it runs", () => {
    expect(eventLoopRole({ http: true, workers: false })).toBe("http");
    expect(eventLoopRole({ http: false, workers: true })).toBe("workers");
    expect(eventLoopRole({ http: true, workers: true })).toBe("http+workers");
  });
});
