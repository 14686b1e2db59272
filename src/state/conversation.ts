// Turns stored message rows into the model-ready transcript, and the optional repair pass.
import { fromJson } from "./json-columns.js";
import type { ConversationMessage, ConversationReadOptions, MessageAttachment, MessageRow, Role, ToolCall } from "./types.js";

/**
 * A messages row as SQLite returns it in raw (array) mode, JSON columns still text. Raw mode skips
 * one object per row, which is much of the cost of reading a long transcript.
 */
export type StoredMessageTuple = [
  id: number,
  role: Role,
  content: string | null,
  api_content: string | null,
  tool_calls: string | null,
  tool_call_id: string | null,
  tool_name: string | null,
  timestamp: number,
  platform_message_id: string | null,
  display_kind: string | null,
  display_metadata: string | null,
  finish_reason: string | null,
];

/** The column list matching StoredMessageTuple, in order. */
export const MESSAGE_TUPLE_COLUMNS =
  "id, role, content, api_content, tool_calls, tool_call_id, tool_name, timestamp, platform_message_id, display_kind, display_metadata, finish_reason";

export function toMessageRow(sessionId: string, row: StoredMessageTuple): MessageRow {
  const [id, role, content, apiContent, toolCalls, toolCallId, toolName, timestamp, platformId, displayKind, displayMetadata, finishReason] = row;
  return {
    id,
    session_id: sessionId,
    role,
    content,
    api_content: apiContent,
    tool_calls: fromJson<ToolCall[]>(toolCalls),
    tool_call_id: toolCallId,
    tool_name: toolName,
    timestamp,
    platform_message_id: platformId,
    display_kind: displayKind,
    display_metadata: fromJson<Record<string, unknown>>(displayMetadata),
    finish_reason: finishReason,
  };
}

/**
 * role, content and timestamp always; every other field only when set, so the result can go to
 * a chat model as is. platform_message_id comes back also as message_id.
 */
export function toConversationMessage(row: StoredMessageTuple, includeRowId: boolean): ConversationMessage {
  const [id, role, content, apiContent, toolCalls, toolCallId, toolName, timestamp, platformId, displayKind, displayMetadata, finishReason] = row;
  const message: ConversationMessage = { role, content, timestamp };
  if (apiContent !== null) message.api_content = apiContent;
  if (toolCalls !== null) {
    const calls = fromJson<ToolCall[]>(toolCalls);
    if (calls && calls.length > 0) message.tool_calls = calls;
  }
  if (toolCallId !== null) message.tool_call_id = toolCallId;
  if (toolName !== null) message.tool_name = toolName;
  if (platformId !== null) {
    message.platform_message_id = platformId;
    message.message_id = platformId;
  }
  if (displayKind !== null) message.display_kind = displayKind;
  if (displayMetadata !== null) message.display_metadata = fromJson<Record<string, unknown>>(displayMetadata);
  if (finishReason !== null) message.finish_reason = finishReason;
  if (includeRowId) message._row_id = id;
  return message;
}

/**
 * The message built from a stored row, kept on the row itself for as long as the row lives: a
 * store's transcript cache (transcript-rows.ts) hands out the same row objects turn after turn,
 * and a turn reads its whole transcript, so building every message again would be most of what a
 * turn allocates once a conversation is long. (A slot on the row costs less at the
 * first read than a WeakMap entry.) The messages are frozen, since every reader of that transcript
 * shares them: whoever needs a changed one copies it.
 */
const BUILT_WITH_ROW_ID = Symbol("message built with its row id");
const BUILT_PLAIN = Symbol("message built without its row id");
type RowWithBuiltMessages = StoredMessageTuple & { [BUILT_WITH_ROW_ID]?: ConversationMessage; [BUILT_PLAIN]?: ConversationMessage };

function sharedMessageOf(row: RowWithBuiltMessages, includeRowId: boolean): ConversationMessage {
  const slot = includeRowId ? BUILT_WITH_ROW_ID : BUILT_PLAIN;
  return (row[slot] ??= Object.freeze(toConversationMessage(row, includeRowId)));
}

/** A transcript's stored rows as the model-ready messages both stores return, each with its images (by message row id). */
export function transcriptFromRows(rows: readonly StoredMessageTuple[], attachments: ReadonlyMap<number, MessageAttachment[]>, options: ConversationReadOptions): ConversationMessage[] {
  const includeRowIds = options.includeRowIds === true;
  let toolTraffic = false;
  const transcript = rows.map((row) => {
    if (row[1] === "tool" || row[4] !== null) toolTraffic = true;
    const message = sharedMessageOf(row, includeRowIds);
    // A read's images (their bytes among them) belong to that read alone; most transcripts have none.
    const held = attachments.size > 0 ? attachments.get(row[0]) : undefined;
    return held ? Object.freeze({ ...message, attachments: held }) : message;
  });
  // Only tool calls and their results are ever repaired. The rows tell whether there are any at
  // one look each, where a pass over the messages (of many shapes) would cost every turn time in
  // proportion to its transcript: most conversations hold none.
  return options.repairAlternation && toolTraffic ? repairToolPairing(transcript) : transcript;
}

function hasText(content: string | null | undefined): boolean {
  return typeof content === "string" && content.trim().length > 0;
}

/**
 * Repairs tool-call pairing so a chat model accepts the transcript. It does exactly this:
 * - an assistant message's tool results are the `tool` messages right after it; a result whose
 *   tool_call_id is not among that assistant's calls (or repeats one already answered), and any
 *   `tool` message not directly after an assistant with tool calls, is dropped;
 * - a call with no result (a crash mid-tool, usually the end of the transcript) is removed from
 *   the assistant's tool_calls; an assistant left with no calls and no text is dropped.
 * Everything else is kept as stored: consecutive user messages are NOT merged, nothing is
 * reordered, no content is rewritten.
 */
export function repairToolPairing(messages: ConversationMessage[]): ConversationMessage[] {
  const repaired: ConversationMessage[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index];
    if (message.role === "tool") {
      index++; // orphan result: no assistant call directly before its block
      continue;
    }
    const calls = message.role === "assistant" ? message.tool_calls : null;
    if (!calls || calls.length === 0) {
      repaired.push(message);
      index++;
      continue;
    }
    const callIds = new Set(calls.map((call) => call.id));
    const answered = new Set<string>();
    const results: ConversationMessage[] = [];
    let next = index + 1;
    for (; next < messages.length && messages[next].role === "tool"; next++) {
      const result = messages[next];
      const callId = result.tool_call_id;
      if (!callId || !callIds.has(callId) || answered.has(callId)) continue;
      answered.add(callId);
      results.push(result);
    }
    const keptCalls = calls.filter((call) => answered.has(call.id));
    if (keptCalls.length === calls.length) {
      repaired.push(message);
    } else if (keptCalls.length > 0) {
      repaired.push({ ...message, tool_calls: keptCalls });
    } else if (hasText(message.content)) {
      const withoutCalls = { ...message };
      delete withoutCalls.tool_calls;
      repaired.push(withoutCalls);
    }
    repaired.push(...results);
    index = next;
  }
  return repaired;
}
