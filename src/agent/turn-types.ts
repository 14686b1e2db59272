// The shapes of one turn: what runConversation takes, what it returns, and what the inner
// model/tool loop sees. Kept apart from agent.ts so loop, admission and tests share them.
import type { ConversationMessage, CreateSessionInput, InboxRow, MessageAttachment, SessionStore, TurnEndRecords } from "../state/types.js";
import type { Turn } from "./turn.js";
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
  /** The session the first turn starts on (a turn may move on to the tip or a compaction child). */
  sessionId: string | null;
  /** The caller knows the session's row exists: the first write does not look for it. Default false. */
  sessionRowKnown?: boolean;
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

/**
 * One user input of a turn: given to runConversation, or read by the gateway under the lease
 * (the head of the session's inbox). Stored once the turn holds the lease.
 */
export interface AdmittedUserInput {
  /** Stored as the message content. */
  text: string;
  /** What the model sees instead, when it differs (e.g. with a time stamp prefix). */
  apiText?: string | null;
  /** Epoch seconds; default: when the message is built. */
  timestamp?: number | null;
  platformMessageId?: string | null;
  displayKind?: string | null;
  displayMetadata?: Record<string, unknown> | null;
  /** Images that came with it (with their bytes, or stored ones by id): stored with the message, sent to the model. */
  attachments?: MessageAttachment[] | null;
}

export type TurnOutcomeStatus = "done" | "failed" | "interrupted";

export interface AdmittedInput {
  /** One input, or several in collect mode, oldest first. */
  messages: AdmittedUserInput[];
  /** What the turn's last fenced flush records beside its messages (inbox completion, delivery rows). */
  endRecords?: EndRecordsFor;
  /** This turn's settings where they differ from the agent's (a channel's settings). */
  settings?: TurnOverrides;
  /**
   * Busy mode 'steer': called under the lease before each model step after the first; the inputs
   * it returns join this turn at that point (stored, fenced, before the model call). The caller
   * makes `endRecords` cover them from then on. Empty when nothing new arrived.
   */
  steer?: SteerFn;
}

export type SteerFn = () => Promise<AdmittedUserInput[]>;

/** A turn's own system prompt, model and tools, and the name of the settings they came from. */
export interface TurnOverrides {
  name: string;
  systemPrompt?: string;
  model?: string;
  tools?: ToolRegistry;
}

/** What a turn's model calls used, summed over its steps. */
export interface TurnUsage {
  modelCalls: number;
  promptTokens: number;
  completionTokens: number;
  toolCalls: number;
}

export type EndRecordsFor = (outcome: { status: TurnOutcomeStatus; finalResponse: string; usage: TurnUsage }) => TurnEndRecords;

export interface AdmittedInputContext {
  sessionId: string;
  history: ConversationMessage[];
  /** The session's row is known to exist (read under the lease): the caller need not read it again. */
  sessionRowKnown: boolean;
  /** The conversation's pending inbox head, read in the lease's transaction (see `pendingInboxLimit`); absent when not read there. */
  pendingInbox?: InboxRow[];
}

export interface RunConversationOptions {
  /**
   * The transcript the caller knows. Used as is when the lease is taken without waiting.
   * Left undefined, the durable transcript is read under the lease.
   */
  conversationHistory?: ConversationMessage[] | null;
  /** Overrides the agent's system prompt for this turn. */
  systemMessage?: string | null;
  /** Aborting it interrupts the turn (soft). */
  signal?: AbortSignal;
  /** Called under the lease, after admission and reload: the turn's input, or null for nothing to do. */
  admittedInput?: (ctx: AdmittedInputContext) => Promise<AdmittedInput | null>;
  /** Read up to this many pending inbox rows of the conversation with the lease, for `admittedInput`. */
  pendingInboxLimit?: number;
  /**
   * The input `admittedInput` will most likely return first (the inbox row a wake-up named),
   * offered to the admission's own step, which stores it under the lease when that row is the
   * head of the pending inbox (see InputUnderLease): then no flush of its own is needed. Only
   * without a caller history; the input must have a platform id and no attachments.
   */
  expectedInput?: { inboxId: number; input: AdmittedUserInput; session: CreateSessionInput };
  /** The conversation (the lease's key) when the caller knows it already: not read again. */
  conversationId?: string;
  /** A live holder has the lease: return at once (`heldElsewhere`, nothing emitted) instead of waiting for it. */
  giveUpWhenHeld?: boolean;
  /** Read the conversation's pending inbox head in the lease release's transaction (`headAfterRelease`). */
  readHeadOnRelease?: boolean;
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
  /** The session the turn ended on (the tip after a wait, or a compaction child, may differ from the input). */
  sessionId: string | null;
  /** Delivery rows created by the turn's end records, to enqueue for sending. */
  deliveryIds: number[];
  /**
   * True when a fenced flush carrying the end records committed: the inbox rows they complete
   * are settled (the caller need not read them back). Unset when the turn had no end records.
   */
  endRecordsStored?: boolean;
  /** With `giveUpWhenHeld`: a live holder had the lease, so nothing ran and nothing was held. */
  heldElsewhere?: boolean;
  /**
   * With `readHeadOnRelease`: the conversation's pending inbox head as of the release (null: none).
   * Unset when the lease was not taken or its release failed.
   */
  headAfterRelease?: InboxRow | null;
}

/** What the inner loop returns; unset flags are derived (completed = not failed and not interrupted). */
export interface LoopResult {
  finalResponse: string;
  messages: ConversationMessage[];
  completed?: boolean;
  failed?: boolean;
  interrupted?: boolean;
  apiCalls?: number;
  /** The model calls' usage, as far as the provider reported it. */
  usage?: TurnUsage;
  error?: string | null;
  failureReason?: string | null;
}

/** Handed to the inner loop. */
export interface TurnContext {
  /** The running turn: its session, lease holder, interrupt state, fenced flush and events. */
  turn: Turn;
  /** This turn's new user messages (already built with content/api_content/platform ids). */
  userMessages: ConversationMessage[];
  /** Present when the gateway asked for end records on the last flush. */
  endRecords: EndRecordsFor | null;
  /** Present in busy mode 'steer': new inputs for the running turn, asked for before each later model step. */
  steer?: SteerFn | null;
  /** The admitted input's own model and tools, when its settings give them. */
  overrides?: TurnOverrides | null;
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
