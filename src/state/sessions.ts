// Session rows and the compression lineage: a compressed session ends with end_reason
// 'compression' and its continuation names it as parent. The root of that chain is the
// conversation id (the turn lease's key); its tip (the newest session) is where the conversation
// continues.
import type { Database, Statement } from "better-sqlite3";
import type { CreateSessionInput, SessionRow, SessionSummary } from "./types.js";

export const COMPRESSION_END_REASON = "compression";

/** Guards against a corrupt parent cycle. */
const MAX_LINEAGE_DEPTH = 10_000;

/** Bound on the ids remembered as their own conversation id; the set starts over when full. */
const MAX_KNOWN_ROOTS = 50_000;

interface ParentLink {
  parent_session_id: string | null;
}

interface ParentState {
  end_reason: string | null;
}

export class SessionSql {
  private readonly insert: Statement<[Record<string, unknown>], SessionRow>;
  private readonly selectOne: Statement<[string], SessionRow>;
  private readonly selectParent: Statement<[string], ParentLink>;
  private readonly selectSource: Statement<[string], { source: string }>;
  private readonly selectEndReason: Statement<[string], ParentState>;
  private readonly selectCompressionChild: Statement<[string], { id: string }>;
  private readonly end: Statement<[number, string, string]>;
  private readonly list: Statement<[number], SessionSummary>;
  private readonly selectLiveForKey: Statement<[string], SessionRow>;
  private readonly selectKeysWithPrefix: Statement<[string, string, number], { session_key: string }>;
  private readonly selectLiveOrCompressedForKey: Statement<[string], SessionRow>;
  private readonly exists: Statement<[string], { one: number }>;
  /**
   * Sessions whose stored row has no parent: their own conversation id for good, since a row's
   * parent is set only when it is created and rows are never deleted. Saves the lookups a turn
   * repeats (lease, fence, release).
   */
  private readonly knownRoots = new Set<string>();

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT INTO sessions (id, source, session_key, chat_id, thread_id, user_id, parent_session_id, started_at, title, model)
       VALUES (@id, @source, @session_key, @chat_id, @thread_id, @user_id, @parent_session_id, @started_at, @title, @model)
       ON CONFLICT (id) DO NOTHING
       RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM sessions WHERE id = ?");
    this.selectParent = db.prepare("SELECT parent_session_id FROM sessions WHERE id = ?");
    this.selectSource = db.prepare("SELECT source FROM sessions WHERE id = ?");
    this.selectEndReason = db.prepare("SELECT end_reason FROM sessions WHERE id = ?");
    this.selectCompressionChild = db.prepare(
      `SELECT child.id FROM sessions child
         JOIN sessions parent ON parent.id = child.parent_session_id
        WHERE child.parent_session_id = ? AND parent.end_reason = '${COMPRESSION_END_REASON}'
        ORDER BY child.started_at DESC, child.rowid DESC LIMIT 1`,
    );
    this.end = db.prepare("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL");
    // last_activity: the newest message by row id (an index lookup per session, not a scan).
    this.list = db.prepare(
      `SELECT s.*, (SELECT m.timestamp FROM messages m WHERE m.session_id = s.id ORDER BY m.id DESC LIMIT 1) AS last_activity
         FROM sessions s
        ORDER BY COALESCE(last_activity, s.started_at) DESC, s.rowid DESC
        LIMIT ?`,
    );
    // A range on the session_key index: every key that starts with the prefix.
    this.selectKeysWithPrefix = db.prepare(
      "SELECT DISTINCT session_key FROM sessions WHERE session_key >= ? AND session_key < ? ORDER BY session_key LIMIT ?",
    );
    this.selectLiveForKey = db.prepare(
      "SELECT * FROM sessions WHERE session_key = ? AND ended_at IS NULL ORDER BY started_at DESC, rowid DESC LIMIT 1",
    );
    // ensureForKey's one read: the newest open session of the key, else its newest compressed one.
    this.selectLiveOrCompressedForKey = db.prepare(
      `SELECT * FROM sessions WHERE session_key = ? AND (ended_at IS NULL OR end_reason = '${COMPRESSION_END_REASON}')
        ORDER BY ended_at IS NULL DESC, started_at DESC, rowid DESC LIMIT 1`,
    );
    this.exists = db.prepare("SELECT 1 AS one FROM sessions WHERE id = ?");
  }

  /** Idempotent: a second create of an existing id returns the existing row unchanged. */
  create(id: string, input: CreateSessionInput, now: number): SessionRow {
    // A new row comes back from the insert itself; only an existing id needs a read.
    const inserted = this.insert.get({
      id,
      source: input.source,
      session_key: input.sessionKey ?? null,
      chat_id: input.chatId ?? null,
      thread_id: input.threadId ?? null,
      user_id: input.userId ?? null,
      parent_session_id: input.parentSessionId ?? null,
      started_at: input.startedAt ?? now,
      title: input.title ?? null,
      model: input.model ?? null,
    });
    const row = inserted ?? this.selectOne.get(id);
    if (!row) throw new Error(`session ${id} vanished right after it was created`);
    return row;
  }

  get(id: string): SessionRow | null {
    return this.selectOne.get(id) ?? null;
  }

  has(id: string): boolean {
    return this.exists.get(id) !== undefined;
  }

  endSession(id: string, reason: string, now: number): void {
    this.end.run(now, reason, id);
  }

  /** The live session of a key, without writing (null: ensureForKey must create one). */
  liveForKey(sessionKey: string): SessionRow | null {
    return this.selectLiveForKey.get(sessionKey) ?? null;
  }

  /**
   * The live session of a routing key: an open session with that key, else the open tip of a
   * compressed one, else a new session named `newId`. Run it inside a write transaction so two
   * first messages racing on one key get one session.
   */
  ensureForKey(sessionKey: string, newId: string, input: CreateSessionInput, now: number): SessionRow {
    // One read, then (for a new conversation, every burst's case) one insert that returns its row.
    const found = this.selectLiveOrCompressedForKey.get(sessionKey);
    if (found && found.ended_at === null) return found;
    if (found) {
      const tip = this.get(this.tipOf(found.id));
      if (tip && tip.ended_at === null) return tip;
    }
    return this.create(newId, { ...input, sessionKey }, now);
  }

  keysWithPrefix(prefix: string, limit: number): string[] {
    // Every string with the prefix sorts at or after it and before prefix + U+FFFF.
    return this.selectKeysWithPrefix.all(prefix, `${prefix}\uffff`, limit).map((r) => r.session_key);
  }

  listRecent(limit: number): SessionSummary[] {
    return this.list.all(limit);
  }

  /**
   * The conversation id: walk parent_session_id up while the parent ended with 'compression'.
   * No row: the id itself.
   */
  conversationIdOf(id: string): string {
    if (this.knownRoots.has(id)) return id;
    let current = id;
    const seen = new Set<string>([current]);
    for (let depth = 0; depth < MAX_LINEAGE_DEPTH; depth++) {
      const link = this.selectParent.get(current);
      const parentId = link?.parent_session_id;
      if (depth === 0 && link && !parentId) this.rememberRoot(id);
      if (!parentId || seen.has(parentId)) return current;
      if (this.selectEndReason.get(parentId)?.end_reason !== COMPRESSION_END_REASON) return current;
      seen.add(parentId);
      current = parentId;
    }
    return current;
  }

  /** The platform that created the session; null when it has no row. */
  sourceOf(id: string): string | null {
    return this.selectSource.get(id)?.source ?? null;
  }

  private rememberRoot(id: string): void {
    // A row read inside a transaction may still be rolled back: remember only committed rows.
    if (this.db.inTransaction) return;
    if (this.knownRoots.size >= MAX_KNOWN_ROOTS) this.knownRoots.clear();
    this.knownRoots.add(id);
  }

  /** The tip: follow compression children down (the newest child at each step). */
  tipOf(id: string): string {
    let current = id;
    const seen = new Set<string>([current]);
    for (let depth = 0; depth < MAX_LINEAGE_DEPTH; depth++) {
      const child = this.selectCompressionChild.get(current)?.id;
      if (!child || seen.has(child)) return current;
      seen.add(child);
      current = child;
    }
    return current;
  }
}
