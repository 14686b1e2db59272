// A session whose messages keep arriving while its turn runs must not keep its worker slot: after
// a turn, the session's next message queues behind the other sessions' waiting wake-ups. Real
// Redis (BullMQ), real SQLite store; the interleaving is fixed by holding turns at the model.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { CompletionRequest, CompletionResult, ModelProvider } from "../../src/agent/types.js";
import { EchoProvider } from "../../src/agent/providers/echo.js";
import { turnJobId } from "../../src/gateway/queues.js";
import type { AcceptResult } from "../../src/gateway/types.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

/** Echo, except that a turn whose last user text is held waits at the model until it is let go. */
class HoldingProvider implements ModelProvider {
  readonly name = "holding-echo";
  readonly model = "echo";
  /** The last user text of each model call, in the order the calls began. */
  readonly began: string[] = [];
  private readonly echo = new EchoProvider();
  private readonly held = new Map<string, { release: () => void; released: Promise<void> }>();

  hold(text: string): void {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.held.set(text, { release, released });
  }

  release(text: string): void {
    this.held.get(text)?.release();
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const text = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    this.began.push(text);
    await this.held.get(text)?.released;
    return this.echo.complete(request);
  }
}

function accepted(result: AcceptResult): { inboxId: number; sessionId: string } {
  if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
  return result;
}

describe("a turn hands its session's next message on instead of keeping its slot", () => {
  let gw: TestGateway;
  const provider = new HoldingProvider();
  beforeAll(async () => {
    gw = await startTestGateway({ http: false, workers: true, provider, env: { WORKER_CONCURRENCY: "2" } });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it("answers a waiting session's message before the busy session's next one", async () => {
    const { ingress, queues } = gw.gateway;
    const wakeReads = vi.spyOn(gw.gateway.store, "wakeUpView");
    provider.hold("a1");
    provider.hold("c1");
    const a1 = accepted(await ingress.accept(inbound("busy", "a1")));
    await waitFor(() => provider.began.includes("a1"), 10_000, "a1's turn to reach the model");

    // a2 arrives while a1's turn runs: its wake-up finds the lease held and completes at once.
    const a2 = accepted(await ingress.accept(inbound("busy", "a2")));
    await waitFor(async () => (await queues.turns.getJob(turnJobId(a2.inboxId))) === undefined, 10_000, "a2's wake-up to complete as a no-op");

    // The second slot is taken by another session's held turn, so b1 waits in the queue.
    const c1 = accepted(await ingress.accept(inbound("other", "c1")));
    await waitFor(() => provider.began.includes("c1"), 10_000, "c1's turn to reach the model");
    const b1 = accepted(await ingress.accept(inbound("waiting", "b1")));
    await waitFor(async () => (await queues.turns.getWaitingCount()) === 1, 10_000, "b1's wake-up to wait");

    provider.release("a1");
    await ingress.waitForOutcome(a1.inboxId, 10_000);
    await ingress.waitForOutcome(b1.inboxId, 10_000);
    await ingress.waitForOutcome(a2.inboxId, 10_000);
    // b1 was waiting before a2 was handed on: it goes first (one slot, first in first out).
    expect(provider.began).toEqual(["a1", "c1", "b1", "a2"]);
    // a2's handed-on job named its platform, so its turn went straight for the lease, as every
    // new row's does: no wake-up read the row first.
    expect(wakeReads).not.toHaveBeenCalled();

    provider.release("c1");
    await ingress.waitForOutcome(c1.inboxId, 10_000);
    for (const id of [a1, a2, b1, c1].map((r) => r.inboxId)) expect((await gw.gateway.store.getInboxRow(id))?.status).toBe("done");
  }, 60_000);
});

describe("a turn adds no wake-up for a next message whose own wake-up has not started", () => {
  let gw: TestGateway;
  const provider = new HoldingProvider();
  beforeAll(async () => {
    gw = await startTestGateway({ http: false, workers: true, provider, env: { WORKER_CONCURRENCY: "1" } });
  }, 60_000);
  afterAll(async () => {
    vi.restoreAllMocks();
    await gw?.stop();
  });

  it("leaves the next message to its own waiting job", async () => {
    const { ingress, queues } = gw.gateway;
    const adds = vi.spyOn(queues.turns, "add");
    provider.hold("x1");
    const x1 = accepted(await ingress.accept(inbound("own-job", "x1")));
    await waitFor(() => provider.began.includes("x1"), 10_000, "x1's turn to reach the model");
    // The only slot is x1's: x2's own wake-up waits in the queue while x1's turn ends.
    const x2 = accepted(await ingress.accept(inbound("own-job", "x2")));
    expect(await queues.turns.getJobState(turnJobId(x2.inboxId))).toBe("waiting");

    provider.release("x1");
    await ingress.waitForOutcome(x1.inboxId, 10_000);
    await ingress.waitForOutcome(x2.inboxId, 10_000);
    expect(provider.began).toEqual(["x1", "x2"]);
    // Every add was a row's own wake-up: none was handed on.
    const jobIds = adds.mock.calls.map(([, , options]) => options?.jobId);
    expect(jobIds.filter((id) => id !== turnJobId(x1.inboxId) && id !== turnJobId(x2.inboxId))).toEqual([]);
  }, 60_000);
});
