// Images kept with their message, on both store backends: recorded with the inbox row, linked to
// the stored user message, read back with the transcript (bytes for the model, metadata for
// listings), copied when a message is written again (a compaction child), and readable one by one.
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storeBackends, type TestStore } from "../support/store-backends.js";

/** Delete a session row behind the store's back, as an operator's cleanup would; returns the attachments left. */
async function deleteSessionDirectly(store: TestStore, sessionId: string): Promise<number> {
  if (store.backend === "sqlite") {
    const raw = new Database(store.config.dbPath);
    try {
      raw.pragma("foreign_keys = ON");
      raw.prepare("DELETE FROM sessions WHERE id = ?").run(sessionId);
      return raw.prepare("SELECT COUNT(*) FROM attachments").pluck().get() as number;
    } finally {
      raw.close();
    }
  }
  const client = new pg.Client({ connectionString: store.config.databaseUrl ?? "" });
  await client.connect();
  try {
    const schema = `"${store.config.databaseSchema}"`;
    await client.query(`DELETE FROM ${schema}.sessions WHERE id = $1`, [sessionId]);
    return Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.attachments`)).rows[0].n);
  } finally {
    await client.end();
  }
}

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
const JPEG = Buffer.from("ffd8ffe000104a46494600010100", "hex");

describe.each(storeBackends)("attachments on $name", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("attachments");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  it("are recorded with their inbox row, once, and read back with their bytes", async () => {
    const db = await store.open();
    const insert = { platform: "api", platformMessageId: "m1", sessionId: "s1", payload: { text: "look" }, attachments: [{ content_type: "image/png", name: "a.png", data: PNG }] };
    const first = await db.recordInbound(insert);
    expect(first.inserted).toBe(true);
    // A redelivery records nothing more.
    const again = await db.recordInbound({ ...insert, attachments: [{ content_type: "image/jpeg", data: JPEG }] });
    expect(again.inserted).toBe(false);
    const stored = await db.inboxAttachments(first.row.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ inbox_id: first.row.id, content_type: "image/png", size_bytes: PNG.length, name: "a.png", session_id: null, message_id: null });
    expect(Buffer.from(stored[0].data).equals(PNG)).toBe(true);
    // The payload stays the message's JSON, without the bytes.
    expect((await db.getInboxRow(first.row.id))?.payload).toEqual({ text: "look" });
  });

  it("are linked to the user message a flush stores, and come back with the transcript", async () => {
    const db = await store.open();
    await db.createSession("s1", { source: "api" });
    const { row } = await db.recordInbound({ platform: "api", platformMessageId: "m1", sessionId: "s1", payload: {}, attachments: [{ content_type: "image/png", data: PNG }] });
    const [recorded] = await db.inboxAttachments(row.id);
    const fresh = { content_type: "image/jpeg", size_bytes: JPEG.length, name: "b.jpg", data: JPEG };
    const [userId] = await db.appendMessagesBatch("s1", [
      { role: "user", content: "two images", attachments: [{ id: recorded.id, content_type: "image/png", size_bytes: PNG.length }, fresh] },
      { role: "assistant", content: "nice" },
    ]);

    const transcript = await db.getMessagesAsConversation("s1");
    expect(transcript[0].attachments?.map((a) => [a.id !== undefined, a.content_type, a.size_bytes])).toEqual([
      [true, "image/png", PNG.length],
      [true, "image/jpeg", JPEG.length],
    ]);
    expect(Buffer.from(transcript[0].attachments?.[0].data ?? []).equals(PNG)).toBe(true);
    expect(Buffer.from(transcript[0].attachments?.[1].data ?? []).equals(JPEG)).toBe(true);
    expect(transcript[1].attachments).toBeUndefined();
    expect(transcript[0].attachments?.[0].id).toBe(recorded.id);

    const rows = await db.getMessages("s1");
    expect(rows[0].attachments?.map((a) => [a.content_type, a.name ?? null, "data" in a])).toEqual([
      ["image/png", null, false],
      ["image/jpeg", "b.jpg", false],
    ]);
    const one = await db.getAttachment(recorded.id);
    expect(one).toMatchObject({ session_id: "s1", message_id: userId, inbox_id: row.id });
  });

  it("are copied, not moved, when the message is written again into another session", async () => {
    const db = await store.open();
    await db.createSession("s1", { source: "api" });
    await db.createSession("s2", { source: "api", parentSessionId: "s1" });
    await db.appendMessagesBatch("s1", [{ role: "user", content: "pic", attachments: [{ content_type: "image/png", size_bytes: PNG.length, data: PNG }] }]);
    const [original] = await db.getMessagesAsConversation("s1");
    await db.appendMessagesBatch("s2", [{ ...original }]);
    const [copy] = await db.getMessagesAsConversation("s2");
    expect(copy.attachments?.[0].id).not.toBe(original.attachments?.[0].id);
    expect(Buffer.from(copy.attachments?.[0].data ?? []).equals(PNG)).toBe(true);
    // The original still has its image.
    expect((await db.getMessagesAsConversation("s1"))[0].attachments?.[0].id).toBe(original.attachments?.[0].id);
  });

  it("go with their messages when a session is deleted", async () => {
    const db = await store.open();
    await db.createSession("s1", { source: "api" });
    await db.appendMessagesBatch("s1", [{ role: "user", content: "pic", attachments: [{ content_type: "image/png", size_bytes: PNG.length, data: PNG }] }]);
    await db.close();
    expect(await deleteSessionDirectly(store, "s1")).toBe(0);
  });
});
