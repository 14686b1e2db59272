// Busy modes and slash commands through a running gateway (real Redis, SQLite, workers).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { makeTempDir } from "../support/tmp.js";

const SLOW = Array.from({ length: 20 }, (_, i) => `word${i}`).join(" ");

describe("busy modes", () => {
  let gw: TestGateway | null = null;
  const temp = makeTempDir("sb-busy");
  afterAll(() => temp.cleanup());
  afterEach(async () => {
    await gw?.stop();
    gw = null;
  });

  async function start(mode: string): Promise<TestGateway> {
    const file = join(temp.dir, `${mode}.yaml`);
    writeFileSync(file, `busy_modes:\n  test: ${mode}\ncollect_max_messages: 10\n`);
    gw = await startTestGateway({ http: false, workers: true, env: { SWITCHBOARD_CONFIG: file, ECHO_CHUNK_DELAY_MS: "80" } });
    return gw;
  }

  it("interrupt: a new message stops the running turn, which keeps what it wrote, and runs next", async () => {
    const { gateway } = await start("interrupt");
    const first = await gateway.ingress.accept(inbound("busy-int", SLOW));
    if (first.status !== "accepted") throw new Error("not accepted");
    await waitFor(() => gateway.store.getSessionTurnLease(first.sessionId), 10_000, "the first turn");
    await new Promise((r) => setTimeout(r, 400));
    const second = await gateway.ingress.accept(inbound("busy-int", "the newer message"));
    if (second.status !== "accepted") throw new Error("not accepted");
    const o1 = await gateway.ingress.waitForOutcome(first.inboxId, 10_000);
    const o2 = await gateway.ingress.waitForOutcome(second.inboxId, 20_000);
    expect(o1.status).toBe("interrupted");
    expect(o1.reply ?? "").not.toContain("word19");
    expect(o2.status).toBe("done");
    expect(o2.reply).toContain("the newer message");
    const rows = await gateway.store.getMessages(await gateway.store.resolveTip(first.sessionId));
    expect(rows.filter((m) => m.role === "user").map((m) => m.content)).toEqual([SLOW, "the newer message"]);
  }, 40_000);

  it("queue: messages wait their turn and each gets its own answer", async () => {
    const { gateway } = await start("queue");
    const a = await gateway.ingress.accept(inbound("busy-q", "alpha beta gamma"));
    const b = await gateway.ingress.accept(inbound("busy-q", "delta"));
    if (a.status !== "accepted" || b.status !== "accepted") throw new Error("not accepted");
    const [oa, ob] = await Promise.all([gateway.ingress.waitForOutcome(a.inboxId, 20_000), gateway.ingress.waitForOutcome(b.inboxId, 20_000)]);
    expect(oa).toMatchObject({ status: "done" });
    expect(oa.reply).toContain("alpha beta gamma");
    expect(ob.reply).toContain("delta");
  }, 40_000);

  it("collect: the next turn takes every message that queued up while a turn ran", async () => {
    const { gateway } = await start("collect");
    const first = await gateway.ingress.accept(inbound("busy-c", "one two three four five six"));
    if (first.status !== "accepted") throw new Error("not accepted");
    await waitFor(() => gateway.store.getSessionTurnLease(first.sessionId), 10_000, "the first turn");
    const later = [];
    for (const text of ["red", "green", "blue"]) later.push(await gateway.ingress.accept(inbound("busy-c", text)));
    const outcomes = await Promise.all(later.map((r) => (r.status === "accepted" ? gateway.ingress.waitForOutcome(r.inboxId, 20_000) : Promise.reject(new Error("x")))));
    // One turn answered all three: the same reply for each, written once.
    expect(new Set(outcomes.map((o) => o.reply)).size).toBe(1);
    const rows = await gateway.store.getMessages(await gateway.store.resolveTip(first.sessionId));
    expect(rows.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["one two three four five six", "red", "green", "blue"]);
    expect(rows.filter((m) => m.role === "assistant")).toHaveLength(2);
  }, 40_000);
});

describe("slash commands", () => {
  let gw: TestGateway | null = null;
  afterEach(async () => {
    await gw?.stop();
    gw = null;
  });

  it("/new starts a fresh session for the chat, /status and /help answer at once, /stop stops a running turn", async () => {
    gw = await startTestGateway({ http: false, workers: true, env: { ECHO_CHUNK_DELAY_MS: "100" } });
    const { ingress, store } = gw.gateway;
    const first = await ingress.accept(inbound("cmd", "hello"));
    if (first.status !== "accepted") throw new Error("not accepted");
    await ingress.waitForOutcome(first.inboxId, 10_000);
    await waitFor(async () => (await store.getSessionTurnLease(first.sessionId)) === null, 5_000, "the lease to be released");

    const help = await ingress.accept(inbound("cmd", "/help"));
    if (help.status !== "accepted") throw new Error("not accepted");
    expect((await ingress.waitForOutcome(help.inboxId, 1000)).reply).toContain("/stop");

    const status = await ingress.accept(inbound("cmd", "/status"));
    if (status.status !== "accepted") throw new Error("not accepted");
    const statusReply = (await ingress.waitForOutcome(status.inboxId, 1000)).reply;
    expect(statusReply, statusReply ?? "").toMatch(/idle; 0 message\(s\) queued/);

    const slow = await ingress.accept(inbound("cmd", SLOW));
    if (slow.status !== "accepted") throw new Error("not accepted");
    await waitFor(() => store.getSessionTurnLease(slow.sessionId), 10_000, "the slow turn");
    const stop = await ingress.accept(inbound("cmd", "/stop"));
    if (stop.status !== "accepted") throw new Error("not accepted");
    const stopped = await ingress.waitForOutcome(slow.inboxId, 5_000);
    expect(stopped.status).toBe("interrupted");

    const reset = await ingress.accept(inbound("cmd", "/new"));
    if (reset.status !== "accepted") throw new Error("not accepted");
    const after = await ingress.accept(inbound("cmd", "a fresh start"));
    if (after.status !== "accepted") throw new Error("not accepted");
    expect(after.sessionId).not.toBe(first.sessionId);
    await ingress.waitForOutcome(after.inboxId, 10_000);
    const fresh = await store.getMessages(after.sessionId);
    expect(fresh.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["a fresh start"]);
    expect((await store.getSession(first.sessionId))?.end_reason).toBe("reset");
  }, 60_000);
});

describe("session keys", () => {
  let gw: TestGateway | null = null;
  const temp = makeTempDir("sb-keys");
  afterAll(() => temp.cleanup());
  afterEach(async () => {
    await gw?.stop();
    gw = null;
  });

  it("maps platform + chat + thread to one session, and adds the user where configured", async () => {
    const file = join(temp.dir, "per-user.yaml");
    writeFileSync(file, "session_per_user: [peruser]\n");
    gw = await startTestGateway({ http: false, workers: false, env: { SWITCHBOARD_CONFIG: file } });
    const { ingress } = gw.gateway;
    const shared = (user: string, thread: string | null) => inbound("room", `hi from ${user}`, { userId: user, threadId: thread, sessionKey: thread ? `test:room:${thread}` : "test:room" });
    const a = await ingress.accept(shared("ann", null));
    const b = await ingress.accept(shared("bob", null));
    const t = await ingress.accept(shared("ann", "thread-1"));
    const perUser = (user: string) => inbound("room", `hi from ${user}`, { platform: "peruser", userId: user, sessionKey: "peruser:room" });
    const pa = await ingress.accept(perUser("ann"));
    const pb = await ingress.accept(perUser("bob"));
    const pa2 = await ingress.accept(perUser("ann"));
    const id = (r: Awaited<ReturnType<typeof ingress.accept>>): string => (r.status === "accepted" ? r.sessionId : "x");
    expect(id(a)).toBe(id(b)); // one chat, one conversation
    expect(id(t)).not.toBe(id(a)); // a thread is its own conversation
    expect(id(pa)).not.toBe(id(pb)); // per user where configured
    expect(id(pa2)).toBe(id(pa));
  });
});
