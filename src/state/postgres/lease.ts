// Every SQL statement that reads or writes session_turn_leases on PostgreSQL: admission, refresh,
// release and the fence that guards transcript writes. Times come from the database's clock, so
// nodes with skewed clocks agree on expiry. Keys are compression-lineage roots (the caller
// resolves them). A holder on another host is only ever replaced once its lease has expired.
import type pg from "pg";
import { TurnLeaseLostError } from "../errors.js";
import { isHeldByThisProcess, isHolderProvablyDead } from "../holder.js";
import type { LeaseAttempt } from "../lease-admission.js";
import { toInboxRow, type StoredInboxRow } from "../inbox.js";
import type { ConversationMessage, DeliveryInsert, InboxRow, InputUnderLease, StaleLease, UsageInsert } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";
import { deliveryColumns, insertDeliveriesSql } from "./deliveries.js";
import { insertUsageSql, usageColumns } from "./usage.js";
import { completeInboxSql, INBOX_COLUMNS } from "./inbox.js";
import { insertMessagesSql, messageColumns } from "./messages.js";
import { TIP_WALK } from "./sessions.js";

export interface LeaseRow {
  holder: string;
  acquired_at: number;
  expires_at: number;
}

export interface LeaseWithClock {
  holder: string;
  expires_at: number;
  now: number;
}

// Admission in one statement (one round trip): insert our row, or take over the existing one when
// it is ours already (a re-acquire keeps acquired_at), has expired, or is held by `$5` — a holder
// the caller proved dead on this host. ON CONFLICT locks the row and judges its latest version,
// so two nodes cannot both win, and a fenced flush holding the row finishes first. The outer read
// shows the row as it was when the statement began: on a refusal, who holds it and until when.
const ACQUIRE = `
  WITH clock AS (SELECT ${clockSql(4)} AS now),
  taken AS (
    INSERT INTO session_turn_leases AS lease (conversation_id, holder, acquired_at, expires_at, ttl_seconds)
    SELECT $1, $2, clock.now, clock.now + $3, $3 FROM clock
    ON CONFLICT (conversation_id) DO UPDATE
       SET holder = EXCLUDED.holder,
           acquired_at = CASE WHEN lease.holder = EXCLUDED.holder THEN lease.acquired_at ELSE EXCLUDED.acquired_at END,
           expires_at = EXCLUDED.expires_at,
           ttl_seconds = EXCLUDED.ttl_seconds
     WHERE lease.holder = EXCLUDED.holder OR lease.expires_at <= EXCLUDED.acquired_at OR lease.holder = $5
    RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM taken) AS acquired, current.holder, current.expires_at, clock.now
    FROM clock LEFT JOIN session_turn_leases current ON current.conversation_id = $1`;

// The fence: locks the lease row until the transaction ends (a takeover waits for the fenced
// writes to commit) and renews the holder's own expired row (nobody took it).
const FENCE_CTES = `
  found AS MATERIALIZED (
    SELECT holder, expires_at, ${clockSql(3)} AS now FROM session_turn_leases WHERE conversation_id = $1 FOR UPDATE
  ),
  renewed AS (
    UPDATE session_turn_leases lease SET expires_at = found.now + lease.ttl_seconds
      FROM found
     WHERE lease.conversation_id = $1 AND lease.holder = $2 AND found.holder = $2 AND found.expires_at <= found.now
  )`;
/** The fence alone, for a flush whose writes follow step by step in its transaction. */
const FENCE = `WITH ${FENCE_CTES} SELECT holder, expires_at, now FROM found`;
// A turn's whole fenced flush as one statement, so one implicit transaction (no BEGIN or COMMIT of
// its own): the fence, then each write only when $2 holds the lease; the outer read says what the
// fence found and returns the new ids. Every data-modifying CTE runs exactly once whether or not
// it is read, on the statement's snapshot, and the writes read the fence's locked row (in its
// latest committed version: a takeover that committed first is seen, and nothing is written).
const HELD = "EXISTS (SELECT 1 FROM found WHERE found.holder = $2)";
const FENCED_FLUSH = `
  WITH ${FENCE_CTES},
  written_messages AS (${insertMessagesSql(4, `WHERE ${HELD}`)}),
  completed AS (${completeInboxSql(17, HELD)}),
  written_deliveries AS (${insertDeliveriesSql(22, `WHERE ${HELD}`)}),
  written_usage AS (${insertUsageSql(29, "(SELECT now FROM found)", HELD)})
  SELECT found.holder, found.expires_at, found.now,
         ARRAY(SELECT id FROM written_messages ORDER BY id) AS message_ids,
         ARRAY(SELECT id FROM written_deliveries ORDER BY id) AS delivery_ids
    FROM (VALUES (1)) AS one (x) LEFT JOIN found ON true`;

export interface FencedFlush {
  sessionId: string;
  messages: ConversationMessage[];
  completion: { ids: number[]; status: string; reply: string | null } | null;
  deliveries: DeliveryInsert[];
  usage?: UsageInsert;
}

export interface FencedFlushRow {
  holder: string | null;
  expires_at: number | null;
  now: number | null;
  message_ids: Array<string | number>;
  delivery_ids: Array<string | number>;
}

// Locks the row until the transaction ends: a takeover waits for the fenced writes to commit.
const SELECT_FOR_UPDATE = `
  SELECT holder, expires_at, ${clockSql(2)} AS now FROM session_turn_leases WHERE conversation_id = $1 FOR UPDATE`;
const SELECT_WITH_CLOCK = `SELECT holder, expires_at, ${clockSql(2)} AS now FROM session_turn_leases WHERE conversation_id = $1`;
const SELECT_ROW = "SELECT holder, acquired_at, expires_at FROM session_turn_leases WHERE conversation_id = $1";
// ttl NULL keeps the TTL the holder acquired with.
const REFRESH = `
  UPDATE session_turn_leases
     SET expires_at = ${clockSql(4)} + COALESCE($3::float8, ttl_seconds), ttl_seconds = COALESCE($3::float8, ttl_seconds)
   WHERE conversation_id = $1 AND holder = $2`;
const DELETE_OWN = "DELETE FROM session_turn_leases WHERE conversation_id = $1 AND holder = $2";
// One row per turn running (or left by a dead one) in the deployment: small.
const SELECT_ALL_WITH_CLOCK = `SELECT conversation_id, holder, expires_at, ${clockSql(1)} AS now FROM session_turn_leases ORDER BY conversation_id`;

interface AcquireOutcome {
  acquired: boolean;
  /** The row as the statement found it (null: none, or one inserted by another node meanwhile). */
  holder: string | null;
  expires_at: number | null;
  now: number;
}

export class PgLeaseSql {
  constructor(private readonly thisHost: string) {}

  /**
   * Insert ours if absent, take over an expired row or one whose holder is a provably dead process
   * on this host; acquired iff the row is ours afterwards. A live holder on another host is never
   * replaced before its lease expires.
   */
  async tryAcquire(db: Queryable, key: string, holder: string, ttlSeconds: number, now: number | null): Promise<LeaseAttempt> {
    let outcome = await this.acquireOnce(db, key, holder, ttlSeconds, now, null);
    if (!outcome.acquired && outcome.holder !== null && isHolderProvablyDead(outcome.holder, this.thisHost)) {
      // Replace exactly that holder: if another node took the row meanwhile, this changes nothing.
      outcome = await this.acquireOnce(db, key, holder, ttlSeconds, now, outcome.holder);
    }
    if (outcome.acquired) return { acquired: true };
    // A row another node inserted after this statement began is not visible yet: try again at once.
    if (outcome.holder === null || outcome.expires_at === null) return { acquired: false, holder: "", expiresAt: outcome.now, now: outcome.now };
    return { acquired: false, holder: outcome.holder, expiresAt: outcome.expires_at, now: outcome.now };
  }

  private async acquireOnce(
    db: Queryable,
    key: string,
    holder: string,
    ttlSeconds: number,
    now: number | null,
    replaceable: string | null,
  ): Promise<AcquireOutcome> {
    const row = (await db.query<AcquireOutcome>(prepared(ACQUIRE, [key, holder, ttlSeconds, now, replaceable]))).rows[0];
    if (!row) throw new Error(`lease ${key}: the admission statement returned no row`);
    return row;
  }

  /** Extends expiry when `holder` owns the row (even if it ran out and nobody took it); else false. */
  async refresh(db: Queryable, key: string, holder: string, ttlSeconds: number | undefined, now: number | null): Promise<boolean> {
    return ((await db.query(prepared(REFRESH, [key, holder, ttlSeconds ?? null, now]))).rowCount ?? 0) > 0;
  }

  /** Deletes the row only when `holder` owns it. True when a row was deleted. */
  async release(db: Queryable, key: string, holder: string): Promise<boolean> {
    return ((await db.query(prepared(DELETE_OWN, [key, holder]))).rowCount ?? 0) > 0;
  }

  /** The holder of a lease that is still live: not expired and not provably dead. Read only. */
  async liveHolder(db: Queryable, key: string, now: number | null): Promise<string | null> {
    const row = (await db.query<LeaseWithClock>(prepared(SELECT_WITH_CLOCK, [key, now]))).rows[0];
    if (!row || row.expires_at <= row.now || isHolderProvablyDead(row.holder, this.thisHost)) return null;
    return row.holder;
  }

  /** Every lease an acquire would take over now (expired, or its holder provably dead). Read only. */
  /** Leases whose holder names this very process (pid and host). */
  async listHeldByThisProcess(db: Queryable): Promise<Array<{ conversationId: string; holder: string }>> {
    const rows = (await db.query<LeaseWithClock & { conversation_id: string }>(prepared(SELECT_ALL_WITH_CLOCK, [null]))).rows;
    return rows.filter((row) => isHeldByThisProcess(row.holder, this.thisHost)).map((row) => ({ conversationId: row.conversation_id, holder: row.holder }));
  }

  async listStale(db: Queryable, now: number | null): Promise<StaleLease[]> {
    const rows = (await db.query<LeaseWithClock & { conversation_id: string }>(prepared(SELECT_ALL_WITH_CLOCK, [now]))).rows;
    const stale: StaleLease[] = [];
    for (const row of rows) {
      if (isHolderProvablyDead(row.holder, this.thisHost)) stale.push({ conversationId: row.conversation_id, holder: row.holder, reason: "dead" });
      else if (row.expires_at <= row.now) stale.push({ conversationId: row.conversation_id, holder: row.holder, reason: "expired" });
    }
    return stale;
  }

  /**
   * Call inside a transaction: delete the lease when `holder` still holds it and it is still stale
   * (the row is locked first, so a refresh or a takeover in between wins). True when deleted.
   */
  async reap(db: Queryable, key: string, holder: string, now: number | null): Promise<boolean> {
    const row = (await db.query<LeaseWithClock>(prepared(SELECT_FOR_UPDATE, [key, now]))).rows[0];
    if (!row || row.holder !== holder) return false;
    if (row.expires_at > row.now && !isHolderProvablyDead(row.holder, this.thisHost)) return false;
    return ((await db.query(prepared(DELETE_OWN, [key, holder]))).rowCount ?? 0) > 0;
  }

  async get(db: Queryable, key: string): Promise<LeaseRow | null> {
    return (await db.query<LeaseRow>(prepared(SELECT_ROW, [key]))).rows[0] ?? null;
  }

  /**
   * The fence, in the flush's transaction and before its writes: locks the lease row until the
   * transaction ends (no takeover can slip in before the commit) and renews our own expired row
   * (nobody took it). Returns the row as it found it, for checkFence before any write is sent.
   */
  async fence(client: pg.PoolClient, key: string, holder: string, now: number | null): Promise<LeaseWithClock | null> {
    return (await client.query<LeaseWithClock>(prepared(FENCE, [key, holder, now]))).rows[0] ?? null;
  }

  /**
   * The fenced flush in one statement (FENCED_FLUSH): atomic alone, or one of several in a
   * transaction. Throws TurnLeaseLostError when `holder` does not hold the lease (nothing written).
   */
  async flush(db: Queryable, key: string, holder: string, flush: FencedFlush, now: number | null): Promise<{ messageIds: number[]; deliveryIds: number[] }> {
    return this.flushOutcome(await this.sendFlush(db, key, holder, flush, now), key, holder);
  }

  /** FENCED_FLUSH sent: its one row, for flushOutcome once the statement has committed. */
  async sendFlush(db: Queryable, key: string, holder: string, flush: FencedFlush, now: number | null): Promise<FencedFlushRow> {
    const completion = flush.completion;
    const result = await db.query<FencedFlushRow>(prepared(FENCED_FLUSH, [
      key,
      holder,
      now,
      flush.sessionId,
      ...messageColumns(flush.messages),
      now,
      completion?.ids ?? [],
      completion?.status ?? "done",
      completion?.reply ?? null,
      null,
      now,
      ...deliveryColumns(flush.deliveries, now),
      ...usageColumns(flush.usage),
    ]));
    return result.rows[0];
  }

  /** The new ids; TurnLeaseLostError when the fence found no lease row or another holder (then nothing was written). */
  flushOutcome(row: FencedFlushRow, key: string, holder: string): { messageIds: number[]; deliveryIds: number[] } {
    // The outer read always returns its one row; holder null: no lease row.
    this.checkFence(row.holder === null ? null : { holder: row.holder, expires_at: row.expires_at ?? 0, now: row.now ?? 0 }, key, holder);
    return { messageIds: row.message_ids.map(Number), deliveryIds: row.delivery_ids.map(Number) };
  }

  /** What the fence found: a missing row or another holder throws TurnLeaseLostError (the writes wrote nothing). */
  checkFence(row: LeaseWithClock | null, key: string, holder: string): void {
    if (!row || row.holder !== holder) throw new TurnLeaseLostError(key, holder, row?.holder ?? null);
  }
}

// The admission's last statement when it stores the turn's first input (InputUnderLease): the
// tip and whether it has a row, the conversation's pending head, read as the turn will take it, and in the same statement (one
// snapshot) the input's message written to the tip when the lease row, locked as the fence locks
// it, is the holder's, the input's row is that head, the tip is the one the caller expected and
// holds no message with the input's platform id. The tip's row is created with it when it has none.
// $1 the session asked about (TIP_WALK starts there), $2 the conversation, $3 the head's size,
// $4 the tip expected (the messages' session), $5-$15 the message columns, $16 the clock,
// $17 the holder, $18 the input's inbox row, $19 its platform id, $20-$27 the session's row.
const PENDING_HEAD_STORING_INPUT = `
  WITH RECURSIVE ${TIP_WALK},
  found AS MATERIALIZED (
    SELECT holder FROM session_turn_leases WHERE conversation_id = $2 FOR UPDATE
  ),
  head AS MATERIALIZED (
    SELECT ${INBOX_COLUMNS} FROM inbox WHERE session_id = $2 AND status = 'pending' ORDER BY id LIMIT $3
  ),
  target AS MATERIALIZED (
    SELECT id FROM tip ORDER BY depth DESC LIMIT 1
  ),
  go AS MATERIALIZED (
    SELECT 1 FROM target
     WHERE target.id = $4
       AND EXISTS (SELECT 1 FROM found WHERE found.holder = $17)
       AND (SELECT min(id) FROM inbox WHERE session_id = $2 AND status = 'pending') = $18::bigint
       AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = $4 AND platform_message_id = $19::text)
  ),
  created AS (
    INSERT INTO sessions (id, source, session_key, chat_id, thread_id, user_id, started_at, title, model)
    SELECT $4, $20, $21, $22, $23, $24, COALESCE($25::float8, ${clockSql(16)}), $26, $27
      FROM go WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = $4)
    ON CONFLICT (id) DO NOTHING
    RETURNING id
  ),
  written AS (${insertMessagesSql(4, "WHERE EXISTS (SELECT 1 FROM go)")})
  SELECT (SELECT id FROM target) AS tip, EXISTS (SELECT 1 FROM sessions WHERE id = (SELECT id FROM target)) AS tip_exists,
         (SELECT min(id) FROM written) AS written_id, EXISTS (SELECT 1 FROM created) AS created, head.*
    FROM (VALUES (1)) AS one (x) LEFT JOIN head ON true
   ORDER BY head.id`;

export interface PendingHeadWithInput {
  /** The tip of the session asked about, and whether it had a row before this statement. */
  tip: string;
  tipExists: boolean;
  pendingInbox: InboxRow[];
  /** The input's message row id; null when it was not stored. */
  inputRowId: number | null;
  /** The tip's row was created with it. */
  createdSession: boolean;
}

type Row = { tip: string; tip_exists: boolean; written_id: string | number | null; created: boolean } & { [K in keyof StoredInboxRow]: StoredInboxRow[K] | null };

/** Sent after the admission and its reads, on the same connection: its own transaction, under the lease just taken. */
export async function pendingHeadStoringInput(
  db: Queryable,
  target: { sessionId: string; conversationId: string; tip: string; holder: string; headSize: number },
  input: InputUnderLease,
  now: number | null,
): Promise<PendingHeadWithInput> {
  const session = input.session;
  const result = await db.query<Row>(prepared(PENDING_HEAD_STORING_INPUT, [
    target.sessionId,
    target.conversationId,
    target.headSize,
    target.tip,
    ...messageColumns([input.message]),
    now,
    target.holder,
    input.inboxId,
    input.message.platform_message_id ?? null,
    session.source,
    session.sessionKey ?? null,
    session.chatId ?? null,
    session.threadId ?? null,
    session.userId ?? null,
    session.startedAt ?? null,
    session.title ?? null,
    session.model ?? null,
  ]));
  const first = result.rows[0];
  return {
    tip: first?.tip ?? target.sessionId,
    tipExists: first?.tip_exists === true,
    pendingInbox: result.rows.filter((row) => row.id !== null).map((row) => toInboxRow(row as StoredInboxRow)),
    inputRowId: first?.written_id === null || first?.written_id === undefined ? null : Number(first.written_id),
    createdSession: first?.created === true,
  };
}
