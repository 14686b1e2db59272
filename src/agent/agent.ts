// Agent.runConversation: one turn behind the durable session turn lease.
//   acquire -> (if it waited or was contended) resolve the compressed tip, reload -> refresh the
//   lease while the loop runs -> fenced flushes -> release.
// See admission.ts (lease + reload), refresher.ts, persistence.ts (fenced flush), loop.ts,
// compaction.ts. runLoop and interrupt are replaceable instance properties (test seams).
import { makeHolder } from "../state/holder.js";
import type { ConversationMessage, FlushExtras, SessionStore } from "../state/types.js";
import { acquireTurnLease, leaseKeyFor, reloadUnderLease } from "./admission.js";
import { compactHistory } from "./compaction.js";
import { runModelLoop } from "./loop.js";
import {
  PERSIST_AFTER_ADMISSION_INTERRUPT,
  buildUserMessage,
  platformIdOf,
  userMessageFromAdmitted,
} from "./messages.js";
import {
  LEASE_ERROR_NOTICE,
  LEASE_LOST_INTERRUPT,
  LEASE_TIMEOUT_LIFECYCLE,
  LEASE_TIMEOUT_NOTICE,
  SESSION_FREE_NOTICE,
  TURN_FAILURE_NOTICE,
  WAIT_CANCELLED_NOTICE,
  WAIT_INTERRUPTED_NOTICE,
  WAITING_NOTICE,
} from "./notices.js";
import { flushMessagesToSessionDb, type FlushHost } from "./persistence.js";
import { LeaseRefresher } from "./refresher.js";
import { createBuiltinTools } from "./tools/builtin.js";
import type { ToolRegistry } from "./tools/registry.js";
import type {
  AgentOptions,
  CompactionOptions,
  InterruptFn,
  LoopResult,
  RunConversationOptions,
  RunLoop,
  TurnContext,
  TurnOutcomeStatus,
  TurnResult,
} from "./turn-types.js";
import type { AgentEvent, AgentEventKind, ModelProvider, StatusKind } from "./types.js";

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function outcomeOf(result: LoopResult): TurnOutcomeStatus {
  if (result.failed) return "failed";
  if (result.interrupted) return "interrupted";
  return "done";
}

export class Agent implements FlushHost {
  store: SessionStore | null;
  provider: ModelProvider;
  sessionId: string | null;
  platform: string;
  persist: boolean;
  tools: ToolRegistry;
  systemPrompt: string | null;
  leaseTtlSeconds: number;
  leaseWaitSeconds: number;
  leaseRefreshIntervalSeconds: number;
  maxSteps: number;
  compaction: CompactionOptions | null;
  onEvent: ((event: AgentEvent) => void) | null;
  private readonly beforeRelease: (() => Promise<void>) | null;
  statusCallback: ((kind: StatusKind, text: string) => void) | null;

  /** Set by interrupt(); cleared when the turn ends. */
  interruptRequested = false;
  interruptMessage: string | null = null;
  hardCancelRequested = false;
  /** The lease holder while a turn holds the lease; every flush is fenced by it. */
  activeSessionTurnLeaseHolder: string | null = null;
  activeLeaseKey: string | null = null;
  lastPersistenceErrorCause: string | null = null;
  lastPersistenceErrorMessage: string | null = null;
  /** True once the session row is known to exist. */
  sessionRowKnown = false;
  readonly flushedMessages = new WeakSet<ConversationMessage>();
  /** Deliveries the current turn's extras created. */
  readonly flushedDeliveryIds: number[] = [];

  private turnActive = false;
  private turnAbort: AbortController | null = null;

  /** The inner model/tool loop; replaceable. */
  runLoop: RunLoop = (message, systemMessage, history, ctx) => runModelLoop(this, message, systemMessage, history, ctx);

  /**
   * Soft: stop at the next safe point keeping what was written (a streaming model call is
   * aborted at once). Hard: also drop partial text and the unadmitted input. Works from any
   * async context while a turn runs or waits; a no-op between turns. Replaceable.
   */
  interrupt: InterruptFn = (message, options) => {
    if (!this.turnActive) return;
    this.interruptRequested = true;
    if (message !== undefined && message !== null) this.interruptMessage = message;
    if (options?.hardCancel) this.hardCancelRequested = true;
    this.turnAbort?.abort();
  };

  constructor(options: AgentOptions) {
    this.store = options.store;
    this.provider = options.provider;
    this.sessionId = options.sessionId;
    this.platform = options.platform;
    this.persist = options.persist ?? true;
    this.tools = options.tools ?? createBuiltinTools();
    this.systemPrompt = options.systemPrompt ?? null;
    this.leaseTtlSeconds = options.leaseTtlSeconds ?? 60;
    this.leaseWaitSeconds = options.leaseWaitSeconds ?? 600;
    this.leaseRefreshIntervalSeconds = options.leaseRefreshIntervalSeconds ?? this.leaseTtlSeconds / 3;
    this.maxSteps = Math.max(1, Math.floor(options.maxSteps ?? 8));
    this.compaction = options.compaction ?? null;
    this.onEvent = options.onEvent ?? null;
    this.beforeRelease = options.beforeRelease ?? null;
    this.statusCallback = options.statusCallback ?? null;
  }

  /** True while runConversation is waiting for the lease or running. */
  get running(): boolean {
    return this.turnActive;
  }

  /** The fenced flush (see persistence.ts). */
  flushMessagesToSessionDb(
    messages: readonly ConversationMessage[],
    conversationHistory: readonly ConversationMessage[] | null,
    extras?: FlushExtras,
  ): Promise<boolean> {
    return flushMessagesToSessionDb(this, messages, conversationHistory, extras);
  }

  compactHistory(
    history: ConversationMessage[],
    pending: readonly ConversationMessage[],
    signal: AbortSignal,
  ): Promise<ConversationMessage[]> {
    return compactHistory(this, history, pending, signal);
  }

  emit(kind: AgentEventKind, data: Record<string, unknown>): void {
    try {
      this.onEvent?.({ kind, sessionId: this.sessionId ?? "", data });
    } catch {
      // A listener's failure is not the turn's.
    }
  }

  status(kind: StatusKind, text: string): void {
    try {
      this.statusCallback?.(kind, text);
    } catch {
      // As above.
    }
    this.emit("status", { level: kind, text });
  }

  async runConversation(userMessage: string | null, options: RunConversationOptions = {}): Promise<TurnResult> {
    if (this.turnActive) throw new Error("a turn is already running on this agent");
    this.turnActive = true;
    const abort = new AbortController();
    this.turnAbort = abort;
    this.lastPersistenceErrorCause = null;
    this.lastPersistenceErrorMessage = null;
    this.flushedDeliveryIds.length = 0;
    const external = options.signal;
    const onExternalAbort = (): void => {
      const reason: unknown = external?.reason;
      void this.interrupt(typeof reason === "string" ? reason : null);
    };
    external?.addEventListener("abort", onExternalAbort, { once: true });
    if (external?.aborted) onExternalAbort();
    try {
      return await this.leaseAndRun(userMessage, options, abort.signal);
    } finally {
      external?.removeEventListener("abort", onExternalAbort);
      // A turn never leaves interrupt state behind for the next one.
      this.interruptRequested = false;
      this.interruptMessage = null;
      this.hardCancelRequested = false;
      this.turnAbort = null;
      this.turnActive = false;
    }
  }

  private async leaseAndRun(userMessage: string | null, options: RunConversationOptions, signal: AbortSignal): Promise<TurnResult> {
    const callerHistory = options.conversationHistory ?? [];
    const historyGiven = options.conversationHistory !== undefined && options.conversationHistory !== null;
    const store = this.store;
    const sessionId = this.sessionId;
    // The only reasons to run without the lease.
    if (!store || !sessionId || !this.persist) return this.runTurn(userMessage, options, callerHistory, signal);

    const leaseKey = await leaseKeyFor(store, sessionId);
    const holder = makeHolder({ sessionId, platform: this.platform });
    let announcedWait = false;
    const admission = await acquireTurnLease({
      store,
      leaseKey,
      holder,
      ttlSeconds: this.leaseTtlSeconds,
      waitSeconds: this.leaseWaitSeconds,
      signal,
      shouldAbort: () => this.interruptRequested,
      onWait: (elapsedSeconds) => {
        this.emit("turn.waiting", { elapsed_seconds: elapsedSeconds });
        if (!announcedWait) {
          announcedWait = true;
          this.status("lifecycle", WAITING_NOTICE);
        }
      },
    });
    if (admission.kind === "timeout") return this.leaseTimeoutResult(sessionId, callerHistory);
    if (admission.kind === "aborted") return this.waitAbortedResult(userMessage, options, callerHistory);
    if (admission.kind === "error") return this.leaseErrorResult(admission.message, callerHistory);

    this.activeSessionTurnLeaseHolder = holder;
    this.activeLeaseKey = leaseKey;
    const refresher = new LeaseRefresher({
      intervalSeconds: () => this.leaseRefreshIntervalSeconds,
      refresh: () => store.refreshSessionTurnLease(leaseKey, holder, { ttlSeconds: this.leaseTtlSeconds }),
      onLost: (reason) => {
        this.status("warn", LEASE_LOST_INTERRUPT);
        return this.interrupt(`${LEASE_LOST_INTERRUPT} (${reason})`, { hardCancel: true });
      },
    });
    refresher.start();
    try {
      let history = callerHistory;
      if (admission.waited || admission.contended || !historyGiven) {
        if (announcedWait) this.status("lifecycle", SESSION_FREE_NOTICE);
        const reloaded = await reloadUnderLease(store, sessionId, callerHistory);
        this.sessionId = reloaded.sessionId;
        if (reloaded.rowKnown !== null) this.sessionRowKnown = reloaded.rowKnown;
        history = reloaded.history;
      }
      return await this.runTurn(userMessage, options, history, signal);
    } finally {
      await refresher.stop();
      await this.beforeRelease?.().catch(() => undefined);
      try {
        await store.releaseSessionTurnLease(leaseKey, holder);
      } catch (err) {
        // It expires on its own; the next holder waits at most the TTL.
        this.emit("status", { level: "warn", text: `lease release failed: ${errorText(err)}` });
      }
      this.activeSessionTurnLeaseHolder = null;
      this.activeLeaseKey = null;
    }
  }

  /** Admitted (or running without a lease): gather the input, run the loop, shape the result. */
  private async runTurn(
    userMessage: string | null,
    options: RunConversationOptions,
    history: ConversationMessage[],
    signal: AbortSignal,
  ): Promise<TurnResult> {
    const userMessages: ConversationMessage[] = [];
    if (userMessage !== null) userMessages.push(this.userMessageFor(userMessage, options));
    let finalExtras: TurnContext["finalExtras"] = null;
    if (options.admittedInput) {
      let admitted;
      try {
        admitted = await options.admittedInput({ sessionId: this.sessionId ?? "", history });
      } catch (err) {
        return this.failedBeforeLoop(history, `admitted_input: ${errorText(err)}`, "exception", TURN_FAILURE_NOTICE);
      }
      if (!admitted) return this.skippedResult(history);
      for (const input of admitted.messages) userMessages.push(userMessageFromAdmitted(input));
      finalExtras = admitted.finalExtras ?? null;
    } else if (userMessage === null) {
      return this.skippedResult(history);
    }
    const fresh = await this.withoutStoredInputs(userMessages, history);

    this.emit("turn.started", { platform: this.platform, inputs: fresh.length });
    const ctx: TurnContext = { userMessages: fresh, signal, finalExtras, extrasFlushed: false };
    const firstText = userMessage ?? fresh[0]?.api_content ?? fresh[0]?.content ?? null;
    const systemMessage = options.systemMessage ?? this.systemPrompt;
    let loop: LoopResult;
    try {
      loop = await this.runLoop(firstText, systemMessage, history, ctx);
    } catch (err) {
      loop = {
        finalResponse: TURN_FAILURE_NOTICE,
        messages: [...history, ...fresh],
        failed: true,
        error: `exception: ${errorText(err)}`,
        failureReason: "exception",
      };
    }
    if (finalExtras && !ctx.extrasFlushed && this.lastPersistenceErrorCause !== "turn_lease") {
      // The loop ended without its last flush (it threw, or was replaced): record the outcome.
      const extras = finalExtras({ status: outcomeOf(loop), finalResponse: loop.finalResponse });
      ctx.extrasFlushed = await this.flushMessagesToSessionDb(loop.messages, history, extras);
    }
    return this.turnResult(loop, finalExtras !== null && !ctx.extrasFlushed);
  }

  private userMessageFor(userMessage: string, options: RunConversationOptions): ConversationMessage {
    return buildUserMessage({
      apiText: userMessage,
      content: options.persistUserMessage,
      timestamp: options.persistUserTimestamp,
      platformMessageId: options.persistUserPlatformId,
      displayKind: options.persistUserDisplayKind,
      displayMetadata: options.persistUserDisplayMetadata,
    });
  }

  /**
   * An input whose platform id is already stored (a turn that crashed after flushing it) is not
   * stored again; when the history already shows it, it is not sent to the model twice either.
   */
  private async withoutStoredInputs(inputs: ConversationMessage[], history: ConversationMessage[]): Promise<ConversationMessage[]> {
    const inHistory = new Set(history.map(platformIdOf).filter((id): id is string => id !== null));
    const fresh: ConversationMessage[] = [];
    for (const input of inputs) {
      const platformId = platformIdOf(input);
      if (platformId === null) {
        fresh.push(input);
        continue;
      }
      if (inHistory.has(platformId)) continue;
      if (await this.isStored(platformId)) this.flushedMessages.add(input);
      fresh.push(input);
    }
    return fresh;
  }

  private async isStored(platformId: string): Promise<boolean> {
    if (!this.store || !this.persist || !this.sessionId) return false;
    try {
      return await this.store.hasPlatformMessageId(this.sessionId, platformId);
    } catch {
      return false;
    }
  }

  private turnResult(loop: LoopResult, extrasMissing: boolean): TurnResult {
    const interrupted = loop.interrupted === true;
    let failed = loop.failed === true;
    let failureReason = loop.failureReason ?? null;
    let error = loop.error ?? null;
    if (this.lastPersistenceErrorCause === "turn_lease") {
      failed = true;
      failureReason = "turn_lease";
      error ??= "turn_lease_lost";
    } else if (extrasMissing && !failed) {
      failed = true;
      failureReason = "persistence";
      error ??= `persistence_failed: ${this.lastPersistenceErrorMessage ?? "unknown"}`;
    }
    const result: TurnResult = {
      finalResponse: loop.finalResponse,
      messages: loop.messages,
      completed: failed ? false : (loop.completed ?? !interrupted),
      failed,
      interrupted,
      interruptMessage: interrupted ? this.interruptMessage : null,
      error,
      failureReason,
      apiCalls: loop.apiCalls ?? 0,
      sessionId: this.sessionId,
      deliveryIds: [...this.flushedDeliveryIds],
    };
    if (failed) {
      this.emit("turn.failed", { error, failure_reason: failureReason, final_response: result.finalResponse });
    } else if (interrupted) {
      this.emit("turn.interrupted", { message: result.interruptMessage, final_response: result.finalResponse });
    } else {
      this.emit("turn.completed", { final_response: result.finalResponse });
    }
    return result;
  }

  private baseResult(messages: ConversationMessage[]): TurnResult {
    return {
      finalResponse: "",
      messages,
      completed: false,
      failed: false,
      interrupted: false,
      interruptMessage: null,
      error: null,
      failureReason: null,
      apiCalls: 0,
      sessionId: this.sessionId,
      deliveryIds: [],
    };
  }

  private skippedResult(history: ConversationMessage[]): TurnResult {
    return { ...this.baseResult(history), completed: true, skipped: true };
  }

  private failedBeforeLoop(history: ConversationMessage[], error: string, reason: string, notice: string): TurnResult {
    this.emit("turn.failed", { error, failure_reason: reason, final_response: notice });
    return { ...this.baseResult(history), failed: true, error, failureReason: reason, finalResponse: notice };
  }

  /** Nothing ran and nothing is released: the lease was never ours. */
  private leaseTimeoutResult(sessionId: string, history: ConversationMessage[]): TurnResult {
    this.status("lifecycle", LEASE_TIMEOUT_LIFECYCLE);
    this.status("warn", LEASE_TIMEOUT_NOTICE);
    return this.failedBeforeLoop(history, `session_turn_lease_timeout:${sessionId}`, "lease_timeout", LEASE_TIMEOUT_NOTICE);
  }

  private leaseErrorResult(message: string, history: ConversationMessage[]): TurnResult {
    this.status("warn", LEASE_ERROR_NOTICE);
    return this.failedBeforeLoop(history, `session_turn_lease_error:${message}`, "lease_error", LEASE_ERROR_NOTICE);
  }

  /**
   * Interrupted while waiting: the unadmitted user message is carried in `messages` (flagged), so
   * the caller hands it to the next turn, which stores it exactly once. A hard cancel drops it.
   */
  private waitAbortedResult(userMessage: string | null, options: RunConversationOptions, history: ConversationMessage[]): TurnResult {
    const hard = this.hardCancelRequested;
    const messages = [...history];
    if (userMessage !== null && !hard) {
      messages.push({ ...this.userMessageFor(userMessage, options), [PERSIST_AFTER_ADMISSION_INTERRUPT]: true });
    }
    const finalResponse = hard ? WAIT_CANCELLED_NOTICE : WAIT_INTERRUPTED_NOTICE;
    this.emit("turn.interrupted", { message: this.interruptMessage, final_response: finalResponse });
    return {
      ...this.baseResult(messages),
      interrupted: true,
      interruptMessage: this.interruptMessage,
      finalResponse,
    };
  }
}
