// Building and converting conversation messages: the user message of a turn, the carried input
// of a turn interrupted before admission, stored copies, and the model's wire messages.
import type { ConversationMessage, MessageAttachment } from "../state/types.js";
import type { ModelImage, ModelMessage } from "./types.js";
import type { AdmittedUserInput } from "./turn-types.js";

/** Marks a user message carried out of a turn that was interrupted before admission. */
export const PERSIST_AFTER_ADMISSION_INTERRUPT = "_persist_after_admission_interrupt" as const;

export function nowSeconds(): number {
  return Date.now() / 1000;
}

export interface UserMessageFields {
  /** What the model sees. */
  apiText: string;
  /** What is stored as content; defaults to apiText. */
  content?: string | null;
  timestamp?: number | null;
  platformMessageId?: string | null;
  displayKind?: string | null;
  displayMetadata?: Record<string, unknown> | null;
  attachments?: MessageAttachment[] | null;
}

/** A user message with every persistable field; api_content only when it differs from content. */
export function buildUserMessage(fields: UserMessageFields): ConversationMessage {
  const content = fields.content ?? fields.apiText;
  const message: ConversationMessage = { role: "user", content };
  if (fields.apiText !== content) message.api_content = fields.apiText;
  message.timestamp = fields.timestamp ?? nowSeconds();
  message.display_kind = fields.displayKind ?? null;
  message.display_metadata = fields.displayMetadata ?? null;
  message.platform_message_id = fields.platformMessageId ?? null;
  if (fields.attachments?.length) message.attachments = fields.attachments;
  return message;
}

export function userMessageFromAdmitted(input: AdmittedUserInput): ConversationMessage {
  return buildUserMessage({
    apiText: input.apiText ?? input.text,
    content: input.text,
    timestamp: input.timestamp,
    platformMessageId: input.platformMessageId,
    displayKind: input.displayKind,
    displayMetadata: input.displayMetadata,
    attachments: input.attachments,
  });
}

export function isCarried(message: ConversationMessage): boolean {
  return message[PERSIST_AFTER_ADMISSION_INTERRUPT] === true;
}

export function carriedInputs(history: readonly ConversationMessage[]): ConversationMessage[] {
  return history.filter(isCarried);
}

export function platformIdOf(message: ConversationMessage): string | null {
  return message.platform_message_id ?? message.message_id ?? null;
}

/** The row to store: in-memory markers stripped, the read-side alias folded back. */
export function toStoredMessage(message: ConversationMessage): ConversationMessage {
  const stored: ConversationMessage = { ...message };
  delete stored._row_id;
  delete stored[PERSIST_AFTER_ADMISSION_INTERRUPT];
  delete stored.message_id;
  const platformId = platformIdOf(message);
  if (platformId !== null) stored.platform_message_id = platformId;
  if (stored.timestamp === undefined || stored.timestamp === null) stored.timestamp = nowSeconds();
  return stored;
}

/** The model-visible text of a message: api_content when present. */
export function modelText(message: ConversationMessage): string | null {
  return message.api_content ?? message.content;
}

/** The images of a user message whose bytes are at hand. */
export function modelImages(message: ConversationMessage): ModelImage[] {
  if (message.role !== "user" || !message.attachments) return [];
  return message.attachments.flatMap((a) => (a.data ? [{ contentType: a.content_type, data: a.data }] : []));
}

export function toModelMessage(message: ConversationMessage): ModelMessage {
  const wire: ModelMessage = { role: message.role, content: modelText(message) };
  const images = modelImages(message);
  if (images.length > 0) wire.images = images;
  if (message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0) {
    wire.tool_calls = message.tool_calls;
  }
  if (message.role === "tool" && message.tool_call_id) wire.tool_call_id = message.tool_call_id;
  return wire;
}

export function toModelMessages(systemMessage: string | null, messages: readonly ConversationMessage[]): ModelMessage[] {
  const wire: ModelMessage[] = [];
  if (systemMessage) wire.push({ role: "system", content: systemMessage });
  for (const message of messages) wire.push(toModelMessage(message));
  return wire;
}

/** Size of what the model would read, for the compaction threshold. */
export function transcriptChars(messages: readonly ConversationMessage[]): number {
  let total = 0;
  for (const message of messages) {
    total += modelText(message)?.length ?? 0;
    for (const call of message.tool_calls ?? []) total += call.function.name.length + call.function.arguments.length;
  }
  return total;
}
