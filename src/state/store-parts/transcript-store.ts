// TranscriptStore: sessions, their compression lineage (tips, conversation ids) and their messages.
// The agent's turns write here (the fenced flush) and read the model-ready transcript back.
import type {
  AppendBatchOptions,
  ConversationMessage,
  ConversationReadOptions,
  CreateSessionInput,
  FlushResult,
  MessageRow,
  SessionRow,
  SessionSummary,
} from "../types.js";

/** Sessions, lineage and transcripts: what a conversation said, and which session holds it now. */
export interface TranscriptStore {
  createSession(id: string, input: CreateSessionInput): Promise<SessionRow>;
  getSession(id: string): Promise<SessionRow | null>;
  endSession(id: string, reason: string): Promise<void>;
  /** Distinct routing keys that start with `prefix` (e.g. every Slack thread the bot was in). */
  sessionKeysWithPrefix(prefix: string, limit?: number): Promise<string[]>;
  /** Newest activity first. */
  listSessions(options?: { limit?: number }): Promise<SessionSummary[]>;
  /**
   * The live session of a routing key, created atomically when there is none (two first messages
   * racing on one key get one session). `newId` names the session when one is created.
   */
  ensureSessionForKey(sessionKey: string, newId: string, input: CreateSessionInput): Promise<SessionRow>;
  /** The tip: the newest session of the session's compacted chain (the session itself when none). */
  resolveTip(sessionId: string): Promise<string>;
  /**
   * The conversation id: the root of the session's compression chain, shared by every session of
   * the chain (the session's own id when it has no row or no compressed parent).
   */
  conversationIdOf(sessionId: string): Promise<string>;
  /**
   * conversationIdOf, and the platform that created the session (`source`; null: no such session
   * yet), in one read: what a client's message addressed to a session by id needs to check.
   */
  addressedSession(sessionId: string): Promise<{ conversationId: string; source: string | null }>;

  appendMessage(sessionId: string, message: ConversationMessage): Promise<number>;
  /** All-or-nothing; returns the new row ids in order. Fenced when `turnLeaseHolder` is given. */
  appendMessagesBatch(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<number[]>;
  /** appendMessagesBatch that also returns the ids of the deliveries created by `endRecords` (to enqueue them). */
  flushTurn(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<FlushResult>;
  getMessages(sessionId: string): Promise<MessageRow[]>;
  getMessagesAsConversation(sessionId: string, options?: ConversationReadOptions): Promise<ConversationMessage[]>;
  hasPlatformMessageId(sessionId: string, platformMessageId: string): Promise<boolean>;
}
