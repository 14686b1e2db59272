// `switchboard migrate-store` as its own process: an SQLite store filled through the store API is
// copied into a PostgreSQL schema, and the PostgreSQL store then reads exactly the same.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, type SessionStore } from "../../src/state/index.js";
import { makeHolder } from "../../src/state/holder.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { makeTempDir } from "../support/tmp.js";

const ROOT = join(import.meta.dirname, "..", "..");
const run = promisify(execFile);

async function migrateStore(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/main/cli.ts", "migrate-store", ...args], { cwd: ROOT, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** Everything the APIs read, for one store. */
async function snapshot(store: SessionStore, sessionIds: string[]) {
  const perSession = [];
  for (const id of sessionIds) {
    perSession.push({
      id,
      conversation: await store.getMessagesAsConversation(id),
      rows: await store.getMessages(id),
      tip: await store.resolveTip(id),
      conversationId: await store.conversationIdOf(id),
      pending: await store.pendingInbox(id),
      deliveries: await store.deliveriesForSession(id),
      session: await store.getSession(id),
    });
  }
  return {
    perSession,
    sessions: await store.listSessions(),
    unsent: await store.listUnsentDeliveries(),
    pendingInbox: await store.listPendingInbox(),
    inboxCounts: await store.inboxCounts(),
    pairings: await store.listPairings(100),
    paired: await store.isPaired("telegram", "7"),
  };
}

describe("switchboard migrate-store", () => {
  const temp = makeTempDir("sb-migrate");
  const url = testDatabaseUrl();
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(url, schema);
    temp.cleanup();
  });

  async function filledSqlite(path: string): Promise<string[]> {
    const store = await openStore({ databaseUrl: null, databaseSchema: "", dbPath: path });
    try {
      // A compaction chain: root -> child (the tip), plus a second, unrelated session.
      await store.createSession("root", { source: "slack", sessionKey: "slack:C1", chatId: "C1", userId: "U1", title: "first", model: "m1", startedAt: 1000 });
      await store.appendMessagesBatch("root", [
        { role: "user", content: "hello", platform_message_id: "p-1", timestamp: 1001 },
        { role: "assistant", content: "hi", display_kind: "card", display_metadata: { buttons: ["a", "b"], n: 2 }, finish_reason: "stop", timestamp: 1002 },
        { role: "assistant", content: null, tool_calls: [{ id: "call1", type: "function", function: { name: "lookup", arguments: "{\"q\":1}" } }], timestamp: 1003 },
        { role: "tool", content: "found", tool_call_id: "call1", tool_name: "lookup", timestamp: 1004 },
      ]);
      await store.endSession("root", "compression");
      await store.createSession("child", { source: "slack", sessionKey: "slack:C1", chatId: "C1", parentSessionId: "root", startedAt: 1005 });
      await store.appendMessagesBatch("child", [
        { role: "system", content: "summary", timestamp: 1006 },
        { role: "user", content: "again", api_content: "again (api)", platform_message_id: "p-2", timestamp: 1007 },
      ]);
      await store.createSession("other", { source: "api", sessionKey: "api:x", startedAt: 1008 });
      await store.appendMessage("other", { role: "user", content: "solo", timestamp: 1009 });

      // The access policy's pairings: one approved user, one live code (codes expire in a year).
      await store.pairingCodeFor("telegram", "7", "AAAA-7777", 365 * 86_400);
      await store.approvePairing("AAAA-7777", "cli");
      await store.pairingCodeFor("telegram", "8", "BBBB-8888", 365 * 86_400);

      // Inbox rows in several states.
      const done = await store.recordInbound({ platform: "slack", platformMessageId: "p-1", sessionId: "root", payload: { text: "hello" }, receivedAt: 1001 });
      const pending = await store.recordInbound({ platform: "slack", platformMessageId: "p-3", sessionId: "child", payload: { text: "later" }, receivedAt: 1010 });
      const failed = await store.recordInbound({ platform: "api", platformMessageId: "a-1", sessionId: "other", payload: { text: "bad" }, receivedAt: 1011 });
      await store.recordRejected({ platform: "api", platformMessageId: "a-2", sessionId: "other", payload: { text: "spam" }, receivedAt: 1012 }, "too long");
      await store.markInboxEnqueued([done.row.id, pending.row.id]);
      await store.completeInbox([done.row.id], "done", "hi");
      await store.completeInbox([failed.row.id], "failed", null, "model error");

      // Deliveries: one sent, one failed for good, one still pending.
      const [sent, lost, waiting] = await store.createDeliveries([
        { platform: "slack", sessionId: "root", target: { channel: "C1" }, text: "hi", inboxId: done.row.id },
        { platform: "slack", sessionId: "root", target: { channel: "C1", thread: "t" }, text: "lost" },
        { platform: "api", sessionId: "other", target: { url: "http://x" }, text: "waiting" },
      ]);
      await store.claimDelivery(sent);
      await store.markDeliverySent(sent, "ts-1");
      await store.claimDelivery(lost);
      await store.markDeliveryFailed(lost, "channel_not_found", true);
      expect(waiting).toBeGreaterThan(lost);
      // An expired lease is not a reason to refuse (nothing holds it any more).
      await store.tryAcquireSessionTurnLease("other", makeHolder({ sessionId: "other", platform: "api", turnId: "old" }), { ttlSeconds: 0.01 });
    } finally {
      await store.close();
    }
    return ["root", "child", "other"];
  }

  it("copies every row with its id and order; the PostgreSQL store reads the same and hands out fresh ids", async () => {
    const path = join(temp.dir, "state.db");
    const sessionIds = await filledSqlite(path);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the lease above expires
    const sqlite = await openStore({ databaseUrl: null, databaseSchema: "", dbPath: path });
    const before = await snapshot(sqlite, sessionIds);
    expect(before.pairings.map((row) => row.code)).toEqual(["BBBB-8888", "AAAA-7777"]);
    await sqlite.close();

    const schema = uniqueSchema("migrate");
    schemas.push(schema);
    const result = await migrateStore(["--from", `sqlite:${path}`, "--to", `${url}${url.includes("?") ? "&" : "?"}schema=${schema}`]);
    expect(result.stderr).not.toMatch(/refused|failed/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("3 sessions, 7 messages, 4 inbox rows, 3 deliveries");

    const pgStore = await openStore({ databaseUrl: url, databaseSchema: schema, dbPath: "" });
    try {
      const after = await snapshot(pgStore, sessionIds);
      expect(after).toEqual(before);
      expect(after.perSession[0].tip).toBe("child");
      expect(after.perSession[1].conversationId).toBe("root");
      expect(after.pendingInbox.map((row) => row.platform_message_id)).toEqual(["p-3"]);
      expect(after.unsent.map((row) => row.text)).toEqual(["waiting"]);
      expect(await pgStore.getSessionTurnLease("other")).toBeNull();

      // New rows continue after the copied ids.
      const maxMessage = Math.max(...after.perSession.flatMap((s) => s.rows.map((row) => row.id)));
      const newMessage = await pgStore.appendMessage("other", { role: "assistant", content: "new" });
      expect(maxMessage).toBe(7);
      expect(newMessage).toBe(8);
      const inbox = await pgStore.recordInbound({ platform: "api", platformMessageId: "a-3", sessionId: "other", payload: {} });
      expect(inbox.row.id).toBe(5); // four inbox rows were copied (ids 1-4)
      const [delivery] = await pgStore.createDeliveries([{ platform: "api", sessionId: "other", target: {}, text: "n" }]);
      expect(delivery).toBe(4);
      await pgStore.createSession("newest", { source: "api" });
      expect((await pgStore.listSessions())[0].id).toBe("newest");
    } finally {
      await pgStore.close();
    }

    // A second copy into the now non-empty schema is refused and changes nothing.
    const again = await migrateStore(["--from", `sqlite:${path}`, "--to", url, "--to-schema", schema]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds rows/);
  }, 90_000);

  it("refuses while a live lease shows a gateway still uses the file, and a missing file or bad arguments", async () => {
    const path = join(temp.dir, "live.db");
    const store = await openStore({ databaseUrl: null, databaseSchema: "", dbPath: path });
    await store.createSession("s", { source: "api" });
    // A holder on another host is never provably dead: the lease is live until it expires.
    expect(await store.tryAcquireSessionTurnLease("s", "pid=1:host=elsewhere:turn=t", { ttlSeconds: 600 })).toBe(true);
    await store.close();
    const schema = uniqueSchema("refuse");
    schemas.push(schema);
    const live = await migrateStore(["--from", `sqlite:${path}`, "--to", url, "--to-schema", schema]);
    expect(live.code).toBe(1);
    expect(live.stderr).toMatch(/live turn lease/);

    const missing = await migrateStore(["--from", `sqlite:${join(temp.dir, "nope.db")}`, "--to", url, "--to-schema", schema]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no SQLite store/);

    const usage = await migrateStore(["--from", path, "--to", url]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--from must be sqlite:<path>/);
  }, 90_000);
});
