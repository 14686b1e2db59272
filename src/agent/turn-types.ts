// The shapes of one turn: what runConversation takes, what it returns, and what the inner
// model/tool loop sees. Kept apart from agent.ts so loop, admission and tests share them.
import type { ConversationMessage, FlushExtras, SessionStore } from "../state/types.js";
import type { AgentEvent, ModelProvider, StatusKind } from "./types.js";
import type { ToolRegistry } from "./tools/registry.js";

export interface CompactionOptions {
  /** Compact when the transcript (model-visible text) passes this many characters. */
  maxChars: number;
  /** How many recent messages stay verbatim; older ones become one summary. */
  keepRecent: number;
}

export interface AgentOptions {
  store: SessionStore | null;
  provider: ModelProvider;
  sessionId: string | null;
  platform: string;
  /** Default true. False: nothing is written and no lease is taken. */
  persist?: boolean;
  tools?: ToolRegistry;
  systemPrompt?: string;
  leaseTtlSeconds?: number;
  leaseWaitSeconds?: number;
  /** Default: a third of the lease TTL. */
  leaseRefreshIntervalSeconds?: number;
  /** Most model calls per turn; the last one is offered no tools so the model must answer. */
  maxSteps?: number;
  compaction?: CompactionOptions | null;
  onEvent?: (event: AgentEvent) => void;
  statusCallback?: (kind: StatusKind, text: string) => void;
  /**
   * Awaited after the turn and before the lease is released: the caller makes sure what the turn
   * emitted is stored (e.g. its events published), so the next holder's events come after.
   */
  beforeRelease?: () => Promise<void>;
}

/** One user input read by the gateway under the lease (the head of the session's inbox). */
export interface AdmittedUserInput {
  /** Stored as the message content. */
  text: string;
  /** What the model sees instead, when it differs (e.g. with a time stamp prefix). */
  apiText?: string | null;
  /** Epoch seconds. */
  timestamp?: number;
  platformMessageId?: string | null;
  displayKind?: string | null;
  displayMetadata?: Record<string, unknown> | null;
}

export type TurnOutcomeStatus = "done" | "failed" | "interrupted";

export interface AdmittedInput {
  /** One input, or several in collect mode, oldest first. */
  messages: AdmittedUserInput[];
  /** Extra writes for the turn's last fenced flush (inbox completion, delivery rows). */
  finalExtras?: (outcome: { status: TurnOutcomeStatus; finalResponse: string }) => FlushExtras;
}

export interface AdmittedInputContext {
  sessionId: string;
  history: ConversationMessage[];
}

export interface RunConversationOptions {
  /**
   * The transcript the caller knows. Used as is when the lease is taken without waiting.
   * Left undefined, the durable transcript is read under the lease.
   */
  conversationHistory?: ConversationMessage[] | null;
  /** Overrides the agent's system prompt for this turn. */
  systemMessage?: string | null;
  /** Stored content of the user message when the model sees something else (userMessage). */
  persistUserMessage?: string | null;
  persistUserTimestamp?: number | null;
  persistUserDisplayKind?: string | null;
  persistUserDisplayMetadata?: Record<string, unknown> | null;
  persistUserPlatformId?: string | null;
  /** Aborting it interrupts the turn (soft). */
  signal?: AbortSignal;
  /** Called under the lease, after admission and reload: the turn's input, or null for nothing to do. */
  admittedInput?: (ctx: AdmittedInputContext) => Promise<AdmittedInput | null>;
}

export interface TurnResult {
  finalResponse: string;
  messages: ConversationMessage[];
  completed: boolean;
  failed: boolean;
  interrupted: boolean;
  interruptMessage: string | null;
  error: string | null;
  /** 'lease_timeout' | 'lease_error' | 'turn_lease' | 'provider' | 'max_steps' | 'persistence' | 'exception' */
  failureReason: string | null;
  apiCalls: number;
  /** True when admittedInput found nothing to do: no turn ran. */
  skipped?: boolean;
  /** The session the turn ended on (a compressed tip or a compaction child may differ from the input). */
  sessionId: string | null;
  /** Delivery rows created by the turn's finalExtras, to enqueue for sending. */
  deliveryIds: number[];
}

/** What the inner loop returns; unset flags are derived (completed = not failed and not interrupted). */
export interface LoopResult {
  finalResponse: string;
  messages: ConversationMessage[];
  completed?: boolean;
  failed?: boolean;
  interrupted?: boolean;
  apiCalls?: number;
  error?: string | null;
  failureReason?: string | null;
}

/** Handed to the inner loop. */
export interface TurnContext {
  /** This turn's new user messages (already built with content/api_content/platform ids). */
  userMessages: ConversationMessage[];
  /** Aborted by interrupt(): stop the model call and tools promptly. */
  signal: AbortSignal;
  /** Present when the gateway asked for extras on the last flush. */
  finalExtras: AdmittedInput["finalExtras"] | null;
  /** The loop sets this once its last flush carried the extras. */
  extrasFlushed: boolean;
}

export type RunLoop = (
  message: string | null,
  systemMessage: string | null,
  history: ConversationMessage[],
  ctx: TurnContext,
) => Promise<LoopResult>;

export interface InterruptOptions {
  /** Also discard carried input and partial text (a lost lease uses this). */
  hardCancel?: boolean;
}

export type InterruptFn = (message?: string | null, options?: InterruptOptions) => void | Promise<void>;
