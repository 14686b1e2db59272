// Graceful shutdown on SIGTERM: stop taking jobs, let the running turn finish (or interrupt it
// at the deadline), release the lease, close Redis clients, exit 0.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGatewayProcess, startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("SIGTERM", () => {
  let ingress: TestGateway;

  beforeAll(async () => {
    ingress = await startTestGateway({ http: false, workers: false });
  }, 60_000);

  afterAll(async () => {
    await ingress?.stop();
  });

  it("lets the running turn finish, releases the lease and exits 0", async () => {
    const worker = await spawnGatewayProcess(["worker"], { ...ingress.env, ECHO_CHUNK_DELAY_MS: "100", SHUTDOWN_TIMEOUT_MS: "10000" });
    try {
      const accepted = await ingress.gateway.ingress.accept(inbound("shutdown", "a b c d e f g h"));
      if (accepted.status !== "accepted") throw new Error("not accepted");
      await waitFor(() => ingress.gateway.store.getSessionTurnLease(accepted.sessionId), 20_000, "the turn to start");
      const code = await worker.stop("SIGTERM");
      expect(code, worker.output()).toBe(0);
      const row = await ingress.gateway.store.getInboxRow(accepted.inboxId);
      expect(row?.status).toBe("done");
      expect(row?.reply).toContain("a b c d e f g h");
      expect(await ingress.gateway.store.getSessionTurnLease(accepted.sessionId)).toBeNull();
    } finally {
      await worker.stop("SIGKILL");
    }
  }, 60_000);

  it("shuts down just as cleanly when the signal comes twice, as a launcher relaying it sends it", async () => {
    const worker = await spawnGatewayProcess(["worker"], { ...ingress.env, ECHO_CHUNK_DELAY_MS: "100", SHUTDOWN_TIMEOUT_MS: "10000" });
    try {
      const accepted = await ingress.gateway.ingress.accept(inbound("shutdown-twice", "a b c d e f g h"));
      if (accepted.status !== "accepted") throw new Error("not accepted");
      await waitFor(() => ingress.gateway.store.getSessionTurnLease(accepted.sessionId), 20_000, "the turn to start");
      worker.child.kill("SIGTERM");
      await new Promise((resolve) => setTimeout(resolve, 50));
      worker.child.kill("SIGTERM");
      const code = await worker.exited;
      // Killed by the second signal, the exit code would be null and the turn left unfinished.
      expect(code, worker.output()).toBe(0);
      const row = await ingress.gateway.store.getInboxRow(accepted.inboxId);
      expect(row?.status).toBe("done");
      expect(await ingress.gateway.store.getSessionTurnLease(accepted.sessionId)).toBeNull();
    } finally {
      await worker.stop("SIGKILL");
    }
  }, 60_000);

  it("interrupts a turn that outlives the shutdown deadline, keeping what it wrote, and exits 0", async () => {
    const worker = await spawnGatewayProcess(["worker"], { ...ingress.env, ECHO_CHUNK_DELAY_MS: "400", SHUTDOWN_TIMEOUT_MS: "500" });
    try {
      const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
      const accepted = await ingress.gateway.ingress.accept(inbound("shutdown-slow", words));
      if (accepted.status !== "accepted") throw new Error("not accepted");
      await waitFor(() => ingress.gateway.store.getSessionTurnLease(accepted.sessionId), 20_000, "the turn to start");
      const started = Date.now();
      const code = await worker.stop("SIGTERM");
      expect(code, worker.output()).toBe(0);
      // The deadline firing is the behaviour: out well before the turn's own end (some 12 s), with
      // a bound 16x the 500 ms deadline; the row's status below says it was interrupted.
      expect(Date.now() - started).toBeLessThan(8_000);
      const row = await ingress.gateway.store.getInboxRow(accepted.inboxId);
      expect(row?.status).toBe("interrupted");
      expect(await ingress.gateway.store.getSessionTurnLease(accepted.sessionId)).toBeNull();
    } finally {
      await worker.stop("SIGKILL");
    }
  }, 60_000);
});
