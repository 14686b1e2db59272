// Transcript rows. Ordered by row id, never by time. Writes run inside the caller's transaction.
import type { Database, Statement } from "better-sqlite3";
import { toJson } from "./json-columns.js";
import { MESSAGE_TUPLE_COLUMNS, type StoredMessageTuple } from "./conversation.js";
import type { ConversationMessage } from "./types.js";

export class MessageSql {
  private readonly insert: Statement<[Record<string, unknown>]>;
  private readonly selectBySession: Statement<[string], StoredMessageTuple>;
  private readonly selectAfter: Statement<[string, number], StoredMessageTuple>;
  private readonly selectPlatformId: Statement<[string, string], { one: number }>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO messages (session_id, role, content, api_content, tool_calls, tool_call_id, tool_name, timestamp,
                             platform_message_id, display_kind, display_metadata, finish_reason)
       VALUES (@session_id, @role, @content, @api_content, @tool_calls, @tool_call_id, @tool_name, @timestamp,
               @platform_message_id, @display_kind, @display_metadata, @finish_reason)`,
    );
    this.selectBySession = db
      .prepare<[string], StoredMessageTuple>(`SELECT ${MESSAGE_TUPLE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY id`)
      .raw(true);
    this.selectAfter = db
      .prepare<[string, number], StoredMessageTuple>(`SELECT ${MESSAGE_TUPLE_COLUMNS} FROM messages WHERE session_id = ? AND id > ? ORDER BY id`)
      .raw(true);
    this.selectPlatformId = db.prepare(
      "SELECT 1 AS one FROM messages WHERE platform_message_id = ? AND session_id = ? LIMIT 1",
    );
  }

  /** Inserts in order and returns the row ids. Must run inside a transaction for all-or-nothing. */
  insertAll(sessionId: string, messages: ConversationMessage[], now: number): number[] {
    return messages.map((message) => {
      const toolCalls = message.tool_calls && message.tool_calls.length > 0 ? message.tool_calls : null;
      const result = this.insert.run({
        session_id: sessionId,
        role: message.role,
        content: message.content ?? null,
        api_content: message.api_content ?? null,
        tool_calls: toJson(toolCalls),
        tool_call_id: message.tool_call_id ?? null,
        tool_name: message.tool_name ?? null,
        timestamp: message.timestamp ?? now,
        platform_message_id: message.platform_message_id ?? message.message_id ?? null,
        display_kind: message.display_kind ?? null,
        display_metadata: toJson(message.display_metadata),
        finish_reason: message.finish_reason ?? null,
      });
      return Number(result.lastInsertRowid);
    });
  }

  rows(sessionId: string): StoredMessageTuple[] {
    return this.selectBySession.all(sessionId);
  }

  /** The session's rows after row `afterId`, in id order. */
  rowsAfter(sessionId: string, afterId: number): StoredMessageTuple[] {
    return this.selectAfter.all(sessionId, afterId);
  }

  hasPlatformMessageId(sessionId: string, platformMessageId: string): boolean {
    return this.selectPlatformId.get(platformMessageId, sessionId) !== undefined;
  }
}
