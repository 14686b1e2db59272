// The agent's outward shapes: model providers and the events a turn emits.
// The agent knows no platform, no HTTP and no Redis.
import type { ConversationMessage, ToolCall } from "../state/types.js";

/** A JSON-schema tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** An image the model sees with a user message. */
export interface ModelImage {
  contentType: string;
  data: Uint8Array;
}

/** A message in the model's wire format (OpenAI chat completions). */
export interface ModelMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  /** A user message's images, after its text. */
  images?: ModelImage[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface CompletionRequest {
  messages: ModelMessage[];
  tools?: ToolSpec[];
  /** Aborted on interrupt: the provider stops the call (and its stream) promptly. */
  signal: AbortSignal;
  /** Streamed text, as it arrives. */
  onDelta?: (text: string) => void;
  /** The model to ask instead of the provider's own (a channel's settings). */
  model?: string;
}

export interface CompletionResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage?: { promptTokens?: number; completionTokens?: number };
}

/** A model server. Implementations: OpenAI-compatible (the `openai` client) and the offline echo model. */
export interface ModelProvider {
  readonly name: string;
  readonly model: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/** Events of a turn, for the gateway to publish (see the WebSocket protocol). */
export type AgentEventKind =
  | "turn.waiting"
  | "turn.started"
  /** Inputs that arrived while the turn ran joined it before a model step (busy mode 'steer'). */
  | "turn.steered"
  | "status"
  | "delta"
  | "tool.started"
  | "tool.finished"
  | "turn.completed"
  | "turn.failed"
  | "turn.interrupted";

export interface AgentEvent {
  kind: AgentEventKind;
  sessionId: string;
  data: Record<string, unknown>;
}

export type StatusKind = "lifecycle" | "warn";

export type { ConversationMessage };
