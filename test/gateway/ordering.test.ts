// Strict per-session order and exactly-once answers with two worker OS processes on one DB.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayEvent } from "../../src/gateway/types.js";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

const SESSIONS = 20;
const PER_SESSION = 10;

async function allEvents(gw: TestGateway, sessionId: string): Promise<GatewayEvent[]> {
  const events: GatewayEvent[] = [];
  const off = await gw.gateway.events.subscribe(sessionId, (e) => events.push(e), { since: "0-0" });
  await new Promise((r) => setTimeout(r, 200));
  off();
  return events;
}

describe("two worker processes on one database", () => {
  let ingress: TestGateway;
  const workers: GatewayProcess[] = [];

  beforeAll(async () => {
    ingress = await startTestGateway({ http: false, workers: false, env: { ECHO_CHUNK_DELAY_MS: "1", WORKER_CONCURRENCY: "8" } });
    for (let i = 0; i < 2; i++) workers.push(await spawnGatewayProcess(["worker"], ingress.env));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await ingress?.stop();
  });

  it("answers a burst of 200 messages over 20 sessions in arrival order, each once, never two turns of a session at once", async () => {
    const { store } = ingress.gateway;
    const sessionIds = new Map<number, string>();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        for (let i = 0; i < PER_SESSION; i++) {
          const result = await ingress.gateway.ingress.accept(inbound(`burst-${s}`, `s${s} m${i}`));
          expect(result.status).toBe("accepted");
          if (result.status === "accepted") sessionIds.set(s, result.sessionId);
        }
      }),
    );
    await waitFor(async () => (await store.inboxCounts()).pending === 0, 120_000, "every inbox row processed");

    for (let s = 0; s < SESSIONS; s++) {
      const sessionId = sessionIds.get(s) as string;
      const tip = await store.resolveTip(sessionId);
      const rows = await store.getMessages(tip);
      const users = rows.filter((m) => m.role === "user").map((m) => m.content);
      expect(users).toEqual(Array.from({ length: PER_SESSION }, (_, i) => `s${s} m${i}`));
      // Each user message is followed by its own answer.
      for (let i = 0; i < rows.length; i++) {
        if (rows[i].role !== "user") continue;
        const answer = rows.slice(i + 1).find((m) => m.role === "assistant");
        expect(answer?.content).toContain(rows[i].content as string);
      }
      expect(rows.filter((m) => m.role === "assistant")).toHaveLength(PER_SESSION);

      const events = await allEvents(ingress, sessionId);
      const turns: Array<{ start: number; end: number }> = [];
      let open: number | null = null;
      for (const e of events) {
        if (e.kind === "turn.started") {
          expect(open, `session ${s}: a turn started while another was running`).toBeNull();
          open = e.ts;
        } else if (e.kind === "turn.completed" || e.kind === "turn.failed" || e.kind === "turn.interrupted") {
          expect(open).not.toBeNull();
          turns.push({ start: open as number, end: e.ts });
          open = null;
        }
      }
      expect(turns).toHaveLength(PER_SESSION);
      for (let i = 1; i < turns.length; i++) expect(turns[i].start).toBeGreaterThanOrEqual(turns[i - 1].end);
    }
    // Both worker processes took part.
    const outputs = workers.map((w) => w.output());
    expect(outputs.every((o) => !/unhandled|FATAL/i.test(o))).toBe(true);
  }, 150_000);

  it("recognises ten concurrent redeliveries of one platform message: one inbox row, one turn", async () => {
    const message = inbound("redelivery", "only once please");
    const results = await Promise.all(Array.from({ length: 10 }, () => ingress.gateway.ingress.accept({ ...message })));
    expect(results.filter((r) => r.status === "accepted")).toHaveLength(1);
    expect(results.filter((r) => r.status === "duplicate")).toHaveLength(9);
    const first = results.find((r) => r.status === "accepted");
    if (!first || first.status !== "accepted") throw new Error("no accepted result");
    const outcome = await ingress.gateway.ingress.waitForOutcome(first.inboxId, 30_000);
    expect(outcome.reply).toContain("only once please");
    await new Promise((r) => setTimeout(r, 500));
    const rows = await ingress.gateway.store.getMessages(await ingress.gateway.store.resolveTip(first.sessionId));
    expect(rows.filter((m) => m.role === "user")).toHaveLength(1);
    expect(rows.filter((m) => m.role === "assistant")).toHaveLength(1);
  }, 60_000);
});
