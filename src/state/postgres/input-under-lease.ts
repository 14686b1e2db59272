// The admission's last statement when it stores the turn's first input (InputUnderLease): the
// conversation's pending head, read as the turn will take it, and in the same statement (one
// snapshot) the input's message written to the tip when the lease row, locked here, is the
// holder's, the input's row is that head, the tip is the one the caller expected and holds no
// message with the input's platform id. The tip's row is created with it when it has none.
import { toInboxRow, type StoredInboxRow } from "../inbox.js";
import type { InboxRow, InputUnderLease } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";
import { INBOX_COLUMNS } from "./inbox.js";
import { insertMessagesSql, messageColumns } from "./messages.js";
import { TIP_WALK } from "./sessions.js";

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
  go AS MATERIALIZED (
    SELECT 1 FROM (SELECT id FROM tip ORDER BY depth DESC LIMIT 1) target
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
  SELECT (SELECT min(id) FROM written) AS written_id, EXISTS (SELECT 1 FROM created) AS created, head.*
    FROM (VALUES (1)) AS one (x) LEFT JOIN head ON true
   ORDER BY head.id`;

export interface PendingHeadWithInput {
  pendingInbox: InboxRow[];
  /** The input's message row id; null when it was not stored. */
  inputRowId: number | null;
  /** The tip's row was created with it. */
  createdSession: boolean;
}

type Row = { written_id: string | number | null; created: boolean } & { [K in keyof StoredInboxRow]: StoredInboxRow[K] | null };

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
    pendingInbox: result.rows.filter((row) => row.id !== null).map((row) => toInboxRow(row as StoredInboxRow)),
    inputRowId: first?.written_id === null || first?.written_id === undefined ? null : Number(first.written_id),
    createdSession: first?.created === true,
  };
}
