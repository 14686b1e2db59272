// Transcript rows on PostgreSQL. Ordered by row id, never by time. A batch is one INSERT over
// arrays, so a turn's flush costs one round trip however many messages it writes.
import { MESSAGE_TUPLE_COLUMNS, type StoredMessageTuple } from "../conversation.js";
import { toJson } from "../json-columns.js";
import type { ConversationMessage } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

/**
 * The batch insert with its parameters from `$first`: the session id, then MESSAGE_ARRAYS column
 * arrays, then the clock. `guard` (a WHERE clause or nothing) decides whether it writes at all.
 */
export const insertMessagesSql = (first: number, guard: string): string => {
  const p = (offset: number): string => `$${first + offset}`;
  return `
  INSERT INTO messages (session_id, role, content, api_content, tool_calls, tool_call_id, tool_name, timestamp,
                        platform_message_id, display_kind, display_metadata, finish_reason)
  SELECT ${p(0)}, m.role, m.content, m.api_content, m.tool_calls, m.tool_call_id, m.tool_name, COALESCE(m.timestamp, ${clockSql(first + 12)}),
         m.platform_message_id, m.display_kind, m.display_metadata, m.finish_reason
    FROM unnest(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::text[], ${p(5)}::text[], ${p(6)}::text[], ${p(7)}::float8[],
                ${p(8)}::text[], ${p(9)}::text[], ${p(10)}::text[], ${p(11)}::text[])
         WITH ORDINALITY AS m (role, content, api_content, tool_calls, tool_call_id, tool_name, timestamp,
                               platform_message_id, display_kind, display_metadata, finish_reason, ord)
   ${guard}
   ORDER BY m.ord
  RETURNING id`;
};
const INSERT_ALL = insertMessagesSql(1, "");

/**
 * Unordered: the rows are put in id order here (byId). The server's own sort of a long transcript
 * (a plan on the session's index plus a sort) is most of the read's time, and rows of an
 * append-only table come back close to id order, which costs the sort here one pass.
 */
const SELECT_BY_SESSION = `SELECT ${MESSAGE_TUPLE_COLUMNS} FROM messages WHERE session_id = $1`;

/**
 * The rows after $2 with, on every row, how many rows up to $2 there are and whether the session
 * has any attachment: one statement, so one snapshot. No rows after $2 still gives one row (the
 * count and the flag, the rest null).
 */
const SELECT_AFTER_WITH_COUNT = `
  SELECT known.n, known.attached, ${MESSAGE_TUPLE_COLUMNS.split(",").map((column) => `m.${column.trim()}`).join(", ")}
    FROM (SELECT count(*)::int AS n, EXISTS (SELECT 1 FROM attachments WHERE session_id = $1) AS attached
            FROM messages WHERE session_id = $1 AND id <= $2) AS known
    LEFT JOIN LATERAL (SELECT ${MESSAGE_TUPLE_COLUMNS} FROM messages WHERE session_id = $1 AND id > $2) AS m ON true
   ORDER BY m.id`;

const SELECT_PLATFORM_ID = "SELECT 1 FROM messages WHERE platform_message_id = $1 AND session_id = $2 LIMIT 1";

/** Column arrays in insertMessagesSql's order, one entry per message. */
export function messageColumns(messages: ConversationMessage[]): unknown[][] {
  const pick = (value: (message: ConversationMessage) => unknown): unknown[] => messages.map(value);
  return [
    pick((m) => m.role),
    pick((m) => m.content ?? null),
    pick((m) => m.api_content ?? null),
    pick((m) => toJson(m.tool_calls && m.tool_calls.length > 0 ? m.tool_calls : null)),
    pick((m) => m.tool_call_id ?? null),
    pick((m) => m.tool_name ?? null),
    pick((m) => m.timestamp ?? null),
    pick((m) => m.platform_message_id ?? m.message_id ?? null),
    pick((m) => m.display_kind ?? null),
    pick((m) => toJson(m.display_metadata)),
    pick((m) => m.finish_reason ?? null),
  ];
}

/** Rows in id order; already in order (the usual case) costs one pass. */
function byId(rows: StoredMessageTuple[]): StoredMessageTuple[] {
  for (let i = 1; i < rows.length; i++) {
    if (rows[i][0] < rows[i - 1][0]) return rows.sort((a, b) => a[0] - b[0]);
  }
  return rows;
}

export class PgMessageSql {
  /**
   * Inserts in order and returns the row ids in that order. Run inside the flush's transaction
   * (the fenced flush's statement has this insert among its own: lease.ts).
   */
  async insertAll(db: Queryable, sessionId: string, messages: ConversationMessage[], now: number | null): Promise<number[]> {
    if (messages.length === 0) return [];
    const result = await db.query<{ id: number }>(prepared(INSERT_ALL, [sessionId, ...messageColumns(messages), now]));
    // Identity values are drawn in insertion order; RETURNING itself promises no order.
    return result.rows.map((row) => row.id).sort((a, b) => a - b);
  }

  async rows(db: Queryable, sessionId: string): Promise<StoredMessageTuple[]> {
    const result = await db.query<StoredMessageTuple>({ ...prepared(SELECT_BY_SESSION, [sessionId]), rowMode: "array" });
    return byId(result.rows);
  }

  /**
   * The rows after `afterId`, or null when the rows up to it are no longer `heldCount` many.
   * `seen.attachments`: whether the session had any attachment in the same snapshot (so whether
   * any message it holds, read now or before, has one).
   */
  async rowsAfterIfUnchanged(db: Queryable, sessionId: string, afterId: number, heldCount: number, seen?: { attachments: boolean }): Promise<StoredMessageTuple[] | null> {
    const result = await db.query<[number, boolean, ...StoredMessageTuple]>({ ...prepared(SELECT_AFTER_WITH_COUNT, [sessionId, afterId]), rowMode: "array" });
    if (result.rows.length === 0 || result.rows[0][0] !== heldCount) return null;
    if (seen) seen.attachments = result.rows[0][1];
    return result.rows.filter((row) => row[2] !== null).map((row) => row.slice(2) as StoredMessageTuple);
  }

  async hasPlatformMessageId(db: Queryable, sessionId: string, platformMessageId: string): Promise<boolean> {
    return ((await db.query(prepared(SELECT_PLATFORM_ID, [platformMessageId, sessionId]))).rowCount ?? 0) > 0;
  }
}
