// GET /health and GET /metrics on a running gateway.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("health and metrics", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ http: true, workers: true });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it("reports Redis and database state", async () => {
    const res = await fetch(`${gw.gateway.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", redis: "ok", db: "ok", workers: true, inbox: { pending: 0 } });
  });

  it("exposes Prometheus counters that move with traffic", async () => {
    const first = await gw.gateway.ingress.accept(inbound("metrics", "count me"));
    if (first.status !== "accepted") throw new Error("not accepted");
    await gw.gateway.ingress.accept(inbound("metrics", "count me", { platformMessageId: "dup-1" }));
    await gw.gateway.ingress.accept(inbound("metrics", "count me", { platformMessageId: "dup-1" }));
    await gw.gateway.ingress.waitForOutcome(first.inboxId, 20_000);
    // The outcome is readable once the turn's flush commits; the worker counts the turn just after.
    const turnCounted = /switchboard_turns_total\{platform="test",outcome="completed"\} [1-9]/;
    let text = "";
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && !turnCounted.test(text); ) {
      const res = await fetch(`${gw.gateway.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/plain");
      text = await res.text();
      if (!turnCounted.test(text)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(text).toMatch(/switchboard_inbound_messages_total\{platform="test",result="accepted"\} [2-9]/);
    expect(text).toMatch(/switchboard_inbound_messages_total\{platform="test",result="duplicate"\} 1/);
    expect(text).toMatch(/switchboard_turns_total\{platform="test",outcome="completed"\} [1-9]/);
    expect(text).toMatch(/switchboard_turn_duration_seconds_count\{platform="test"\} [1-9]/);
    // Accepted (not duplicate) messages are timed: record + enqueue.
    expect(text).toMatch(/switchboard_ingress_accept_seconds_count\{platform="test"\} [1-9]/);
    expect(text).toMatch(/switchboard_queue_jobs\{queue="turns",state="waiting"\} \d+/);
    expect(text).toContain("switchboard_lease_waits_total");
    // What SQLite writes waited for (busy retries, the in-process write gate): present, counted per thread.
    expect(text).toMatch(/switchboard_sqlite_busy_retries_total \d+/);
    expect(text).toMatch(/switchboard_sqlite_write_gate_waits_total \d+/);
    expect(text).toMatch(/switchboard_sqlite_wal_rewinds_total \d+/);
  }, 30_000);
});
