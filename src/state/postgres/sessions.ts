// Session rows and the compression lineage on PostgreSQL (see ../sessions.ts for the rules). The
// lineage walks are recursive queries: one round trip whatever the chain's length.
import type pg from "pg";
import { COMPRESSION_END_REASON } from "../sessions.js";
import type { CreateSessionInput, SessionRow, SessionSummary } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

const COLUMNS = "id, source, session_key, chat_id, thread_id, user_id, parent_session_id, started_at, ended_at, end_reason, title, model";

/** Guards against a corrupt parent cycle (besides the path check). */
const MAX_LINEAGE_DEPTH = 10_000;

/**
 * The recursive step of a walk up a compression lineage (a CTE `lineage (…, id, depth, path)`):
 * from a session to its parent while the parent ended in compression, never round a cycle.
 * `carried` names columns of `lineage` carried along unchanged (with a trailing comma).
 */
export function compressionParentStep(carried = ""): string {
  return `SELECT ${carried} s.parent_session_id, lineage.depth + 1, lineage.path || s.parent_session_id
      FROM lineage
      JOIN sessions s ON s.id = lineage.id
      JOIN sessions parent ON parent.id = s.parent_session_id
     WHERE parent.end_reason = '${COMPRESSION_END_REASON}'
       AND NOT s.parent_session_id = ANY (lineage.path)
       AND lineage.depth < ${MAX_LINEAGE_DEPTH}`;
}

/** Bound on the ids remembered as their own lineage root; the set starts over when full. */
const MAX_KNOWN_ROOTS = 50_000;

const INSERT = `
  INSERT INTO sessions (id, source, session_key, chat_id, thread_id, user_id, parent_session_id, started_at, title, model)
  VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::float8, ${clockSql(11)}), $9, $10)
  ON CONFLICT (id) DO NOTHING
  RETURNING ${COLUMNS}`;

const SELECT_ONE = `SELECT ${COLUMNS} FROM sessions WHERE id = $1`;

const END = `UPDATE sessions SET ended_at = ${clockSql(3)}, end_reason = $2 WHERE id = $1 AND ended_at IS NULL`;

const LIVE_FOR_KEY = `
  SELECT ${COLUMNS} FROM sessions WHERE session_key = $1 AND ended_at IS NULL
   ORDER BY started_at DESC, seq DESC LIMIT 1`;

const COMPRESSED_FOR_KEY = `
  SELECT id FROM sessions WHERE session_key = $1 AND end_reason = '${COMPRESSION_END_REASON}'
   ORDER BY started_at DESC, seq DESC LIMIT 1`;

// A range on the session_key index (byte order): every key that starts with the prefix.
const KEYS_WITH_PREFIX = `
  SELECT DISTINCT session_key FROM sessions WHERE session_key >= $1 AND session_key < $2 ORDER BY session_key LIMIT $3`;

// last_activity: the newest message by row id (an index lookup per session, not a scan).
const LIST_RECENT = `
  SELECT ${COLUMNS}, last_activity FROM (
    SELECT s.*, (SELECT m.timestamp FROM messages m WHERE m.session_id = s.id ORDER BY m.id DESC LIMIT 1) AS last_activity
      FROM sessions s
  ) listed
  ORDER BY COALESCE(last_activity, started_at) DESC, seq DESC
  LIMIT $1`;

// Up through parents that ended in compression; the last step reached is the root. A session with
// no row is its own root (the first step needs no row).
const LINEAGE_ROOT = `
  WITH RECURSIVE lineage (id, depth, path) AS (
    SELECT $1::text, 0, ARRAY[$1::text]
    UNION ALL
    ${compressionParentStep()}
  )
  SELECT lineage.id, (SELECT s.parent_session_id IS NULL FROM sessions s WHERE s.id = $1) AS parentless,
         (SELECT s.source FROM sessions s WHERE s.id = $1) AS source
    FROM lineage ORDER BY depth DESC LIMIT 1`;

// Down through the newest compression child at each step, to the live tip.
export const TIP_WALK = `
  tip (id, depth, path) AS (
    SELECT $1::text, 0, ARRAY[$1::text]
    UNION ALL
    SELECT child.id, tip.depth + 1, tip.path || child.id
      FROM tip
      JOIN sessions parent ON parent.id = tip.id AND parent.end_reason = '${COMPRESSION_END_REASON}'
      CROSS JOIN LATERAL (
        SELECT c.id FROM sessions c WHERE c.parent_session_id = tip.id ORDER BY c.started_at DESC, c.seq DESC LIMIT 1
      ) child
     WHERE NOT child.id = ANY (tip.path) AND tip.depth < ${MAX_LINEAGE_DEPTH}
  )`;
const COMPRESSION_TIP = `WITH RECURSIVE ${TIP_WALK} SELECT id FROM tip ORDER BY depth DESC LIMIT 1`;

// The tip and its row in one statement (row columns null when the tip has no row).
const TIP_WITH_ROW = `
  WITH RECURSIVE ${TIP_WALK}
  SELECT found.id AS tip, ${COLUMNS.split(", ").map((column) => `s.${column}`).join(", ")}
    FROM (SELECT id FROM tip ORDER BY depth DESC LIMIT 1) found LEFT JOIN sessions s ON s.id = found.id`;

export class PgSessionSql {
  /**
   * Sessions whose stored row has no parent: their own lineage root for good (a parent is set
   * only at creation and rows are never deleted). Saves a round trip on most lease calls.
   */
  private readonly knownRoots = new Set<string>();
  /** Each stored session's source (the platform that created it), which never changes. */
  private readonly knownSources = new Map<string, string>();

  constructor(private readonly schema: string) {}

  /**
   * Idempotent: a second create of an existing id returns the existing row unchanged (read in a
   * statement of its own, which sees a row another transaction committed meanwhile). `committed`:
   * the caller runs no transaction around it, so a row without a parent is a known root at once.
   */
  async create(db: Queryable, id: string, input: CreateSessionInput, now: number | null, committed = false): Promise<SessionRow> {
    const inserted = await db.query<SessionRow>(prepared(INSERT, [
      id,
      input.source,
      input.sessionKey ?? null,
      input.chatId ?? null,
      input.threadId ?? null,
      input.userId ?? null,
      input.parentSessionId ?? null,
      input.startedAt ?? null,
      input.title ?? null,
      input.model ?? null,
      now,
    ]));
    const row = inserted.rows[0] ?? (await this.get(db, id));
    if (!row) throw new Error(`session ${id} vanished right after it was created`);
    if (committed && row.parent_session_id === null) this.rememberRoot(id);
    return row;
  }

  async get(db: Queryable, id: string): Promise<SessionRow | null> {
    return (await db.query<SessionRow>(prepared(SELECT_ONE, [id]))).rows[0] ?? null;
  }

  async endSession(db: Queryable, id: string, reason: string, now: number | null): Promise<void> {
    await db.query(prepared(END, [id, reason, now]));
  }

  /** The live session of a key, without writing (null: ensureForKey must create one). */
  async liveForKey(db: Queryable, sessionKey: string): Promise<SessionRow | null> {
    return (await db.query<SessionRow>(prepared(LIVE_FOR_KEY, [sessionKey]))).rows[0] ?? null;
  }

  /**
   * The live session of a routing key: an open session with that key, else the open tip of a
   * compressed one, else a new session named `newId`. Run inside a transaction: the advisory lock
   * on the key makes two first messages racing on one key (on any node) get one session.
   */
  async ensureForKey(client: pg.PoolClient, sessionKey: string, newId: string, input: CreateSessionInput, now: number | null): Promise<SessionRow> {
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`switchboard:session-key:${this.schema}:${sessionKey}`]);
    const live = await this.liveForKey(client, sessionKey);
    if (live) return live;
    const compressed = (await client.query<{ id: string }>(prepared(COMPRESSED_FOR_KEY, [sessionKey]))).rows[0]?.id;
    if (compressed) {
      const tip = await this.get(client, await this.tipOf(client, compressed));
      if (tip && tip.ended_at === null) return tip;
    }
    return this.create(client, newId, { ...input, sessionKey }, now);
  }

  async keysWithPrefix(db: Queryable, prefix: string, limit: number): Promise<string[]> {
    // Every string with the prefix sorts at or after it and before prefix + U+FFFF.
    const result = await db.query<{ session_key: string }>(prepared(KEYS_WITH_PREFIX, [prefix, `${prefix}\uffff`, limit]));
    return result.rows.map((row) => row.session_key);
  }

  async listRecent(db: Queryable, limit: number): Promise<SessionSummary[]> {
    return (await db.query<SessionSummary>(prepared(LIST_RECENT, [limit]))).rows;
  }

  /**
   * Walk parent_session_id up while the parent ended with 'compression'. No row: the id itself.
   * `remember`: the caller reads committed rows only (not inside a transaction that created one).
   */
  async conversationIdOf(db: Queryable, id: string, remember = true): Promise<string> {
    if (this.knownRoots.has(id)) return id;
    return (await this.lineageRoot(db, id, remember)).conversationId;
  }

  /** conversationIdOf and the session's source (null: no row), in the same one statement. */
  async addressed(db: Queryable, id: string): Promise<{ conversationId: string; source: string | null }> {
    const source = this.knownSources.get(id);
    if (source !== undefined && this.knownRoots.has(id)) return { conversationId: id, source };
    return this.lineageRoot(db, id, true);
  }

  private async lineageRoot(db: Queryable, id: string, remember: boolean): Promise<{ conversationId: string; source: string | null }> {
    const row = (await db.query<{ id: string; parentless: boolean | null; source: string | null }>(prepared(LINEAGE_ROOT, [id]))).rows[0];
    if (!row) return { conversationId: id, source: null };
    if (remember && row.parentless === true) this.rememberRoot(id);
    if (remember && row.source !== null) {
      if (this.knownSources.size >= MAX_KNOWN_ROOTS) this.knownSources.clear();
      this.knownSources.set(id, row.source);
    }
    return { conversationId: row.id, source: row.source };
  }

  /** `id` has a committed row without a parent. */
  rememberRoot(id: string): void {
    if (this.knownRoots.size >= MAX_KNOWN_ROOTS) this.knownRoots.clear();
    this.knownRoots.add(id);
  }

  /** tipOf and the tip's row (null: none) in one statement. */
  async tipWithRow(db: Queryable, id: string): Promise<{ tip: string; row: SessionRow | null }> {
    const found = (await db.query<SessionRow & { tip: string }>(prepared(TIP_WITH_ROW, [id]))).rows[0];
    if (!found) return { tip: id, row: null };
    const { tip, ...row } = found;
    return { tip, row: row.id === null ? null : row };
  }

  /** Follow compression children down to the live tip (the newest child at each step). */
  async tipOf(db: Queryable, id: string): Promise<string> {
    return (await db.query<{ id: string }>(prepared(COMPRESSION_TIP, [id]))).rows[0]?.id ?? id;
  }
}
