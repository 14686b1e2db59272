// Agent.runConversation: one turn behind the durable session turn lease.
//   acquire -> (if it waited or was contended, or has no caller history) resolve the tip, reload
//   (without a caller history: read in the acquiring transaction) -> refresh the lease while the
//   loop runs -> fenced flushes -> events in Redis -> release.
// The Agent holds settings and collaborators; each run creates a Turn (turn.ts) that holds the
// run's state. See admission.ts (lease + reload), refresher.ts, persistence.ts (fenced flush),
// loop.ts, compaction.ts, turn-results.ts. runLoop and interrupt are replaceable (test seams).
import { makeHolder } from "../state/holder.js";
import type { ConversationMessage, InboxRow, InputUnderLease, SessionStore } from "../state/types.js";
import { acquireTurnLease, conversationIdFor, reloadFromRead, reloadUnderLease } from "./admission.js";
import { runModelLoop } from "./loop.js";
import { modelText, platformIdOf, toStoredMessage, userMessageFromAdmitted } from "./messages.js";
import { LEASE_LOST_INTERRUPT, SESSION_FREE_NOTICE, TURN_FAILURE_NOTICE, WAITING_NOTICE } from "./notices.js";
import { withoutStoredInputs } from "./persistence.js";
import { LeaseRefresher } from "./refresher.js";
import { createBuiltinTools } from "./tools/builtin.js";
import type { ToolRegistry } from "./tools/registry.js";
import { Turn, type TurnView } from "./turn.js";
import {
  failedBeforeLoop,
  heldElsewhereResult,
  leaseErrorResult,
  leaseTimeoutResult,
  loopTurnResult,
  outcomeOf,
  skippedResult,
  waitAbortedResult,
} from "./turn-results.js";
import type {
  AdmittedUserInput,
  AgentOptions,
  CompactionOptions,
  EndRecordsFor,
  InterruptFn,
  LoopResult,
  RunConversationOptions,
  RunLoop,
  SteerFn,
  TurnOverrides,
  TurnResult,
} from "./turn-types.js";
import type { AgentEvent, ModelProvider, StatusKind } from "./types.js";

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What admission read (and stored) in its own step, beyond the history. */
interface UnderLease {
  holdsStoredTranscript: boolean;
  pendingInbox?: InboxRow[];
  /** The expected input, stored by admission after the transcript it read (so not in the history). */
  storedInput?: { platformId: string | null; rowId: number };
}

/** The expected input as admission stores it, when it can: one plain message with a platform id. */
function expectedInputUnderLease(expected: RunConversationOptions["expectedInput"]): InputUnderLease | undefined {
  if (!expected || expected.input.attachments?.length) return undefined;
  const message = toStoredMessage(userMessageFromAdmitted(expected.input));
  if (platformIdOf(message) === null) return undefined;
  return { inboxId: expected.inboxId, message, session: expected.session };
}

/**
 * Whether the history plus the input stored at admission hold every stored input: the input
 * admission stored is the admitted one with its platform id (then it is marked stored, with its
 * row id, and no flush writes it again). Should no admitted input carry that id, the store is
 * asked about each one instead, as after a crash.
 */
function holdsEveryStoredInput(turn: Turn, inputs: readonly ConversationMessage[], underLease: UnderLease): boolean {
  const stored = underLease.storedInput;
  if (!stored) return underLease.holdsStoredTranscript;
  const input = inputs.find((message) => platformIdOf(message) === stored.platformId);
  if (!input) return false;
  input._row_id = stored.rowId;
  turn.markStored(input);
  return underLease.holdsStoredTranscript;
}

/** A turn that ended before its loop counted anything. */
const NO_USAGE = { modelCalls: 0, promptTokens: 0, completionTokens: 0, toolCalls: 0 } as const;

export class Agent {
  store: SessionStore | null;
  provider: ModelProvider;
  /** Where the next turn starts; a turn that moved (to the tip, or a compaction child) moves it. */
  sessionId: string | null;
  /** Whether that session's row is known to exist; follows the session like sessionId. */
  sessionRowKnown: boolean;
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
  statusCallback: ((kind: StatusKind, text: string) => void) | null;
  private readonly beforeRelease: (() => Promise<void>) | null;

  private current: Turn | null = null;
  private last: Turn | null = null;

  /** The inner model/tool loop; replaceable. */
  runLoop: RunLoop = runModelLoop;

  /**
   * Soft: stop at the next safe point keeping what was written (a streaming model call is
   * aborted at once). Hard: also drop partial text and the unadmitted input. Works from any
   * async context while a turn runs or waits; a no-op between turns. Replaceable.
   */
  interrupt: InterruptFn = (message, options) => {
    this.current?.interrupt(message, options);
  };

  constructor(options: AgentOptions) {
    this.store = options.store;
    this.provider = options.provider;
    this.sessionId = options.sessionId;
    this.sessionRowKnown = options.sessionRowKnown ?? false;
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
    return this.current !== null;
  }

  /** The turn running now, or else the last one that ran; null before the first. Read-only. */
  get lastTurn(): TurnView | null {
    return this.last;
  }

  /**
   * One turn. `input` is the user's message: its text (stored and sent as is), or an input with
   * what is stored apart from what the model sees; null when `admittedInput` supplies the input.
   */
  async runConversation(input: string | AdmittedUserInput | null, options: RunConversationOptions = {}): Promise<TurnResult> {
    if (this.current) throw new Error("a turn is already running on this agent");
    const turn = new Turn(this, {
      sessionId: this.sessionId,
      sessionRowKnown: this.sessionRowKnown,
      input: typeof input === "string" ? { text: input } : input,
    });
    this.current = turn;
    this.last = turn;
    const external = options.signal;
    const onExternalAbort = (): void => {
      const reason: unknown = external?.reason;
      void this.interrupt(typeof reason === "string" ? reason : null);
    };
    external?.addEventListener("abort", onExternalAbort, { once: true });
    if (external?.aborted) onExternalAbort();
    try {
      return await this.leaseAndRun(turn, options);
    } finally {
      external?.removeEventListener("abort", onExternalAbort);
      // A turn never leaves interrupt state behind for the next one.
      turn.end();
      this.sessionId = turn.sessionId;
      this.sessionRowKnown = turn.sessionRowKnown;
      this.current = null;
    }
  }

  private async leaseAndRun(turn: Turn, options: RunConversationOptions): Promise<TurnResult> {
    const callerHistory = options.conversationHistory ?? [];
    const historyGiven = options.conversationHistory !== undefined && options.conversationHistory !== null;
    const store = this.store;
    const sessionId = turn.sessionId;
    // The only reasons to run without the lease.
    if (!store || !sessionId || !this.persist) return this.runTurn(turn, options, callerHistory);

    const conversationId = options.conversationId ?? (await conversationIdFor(store, sessionId));
    const holder = makeHolder({ sessionId, platform: this.platform });
    const inputUnderLease = historyGiven ? undefined : expectedInputUnderLease(options.expectedInput);
    let announcedWait = false;
    const admission = await acquireTurnLease({
      store,
      conversationId,
      holder,
      ttlSeconds: this.leaseTtlSeconds,
      waitSeconds: this.leaseWaitSeconds,
      signal: turn.signal,
      shouldAbort: () => turn.interruptRequested,
      // Without a caller history the transcript is reloaded anyway: read it in the admission's transaction.
      ...(historyGiven ? {} : { readSessionId: sessionId, pendingInboxLimit: options.pendingInboxLimit, input: inputUnderLease }),
      giveUpWhenHeld: options.giveUpWhenHeld,
      onWait: (elapsedSeconds) => {
        turn.emit("turn.waiting", { elapsed_seconds: elapsedSeconds });
        if (!announcedWait) {
          announcedWait = true;
          turn.status("lifecycle", WAITING_NOTICE);
        }
      },
    });
    if (admission.kind === "held") return heldElsewhereResult(turn, callerHistory);
    if (admission.kind === "timeout") return leaseTimeoutResult(turn, sessionId, callerHistory);
    if (admission.kind === "aborted") return waitAbortedResult(turn, callerHistory);
    if (admission.kind === "error") return leaseErrorResult(turn, admission.message, callerHistory);

    turn.holdLease(conversationId, holder);
    const refresher = new LeaseRefresher({
      intervalSeconds: () => this.leaseRefreshIntervalSeconds,
      refresh: () => store.refreshSessionTurnLease(conversationId, holder, { ttlSeconds: this.leaseTtlSeconds }),
      onLost: (reason) => {
        turn.status("warn", LEASE_LOST_INTERRUPT);
        return this.interrupt(`${LEASE_LOST_INTERRUPT} (${reason})`, { hardCancel: true });
      },
    });
    refresher.start();
    let result: TurnResult;
    /** undefined: not read (not asked for, or the release failed). */
    let headAfterRelease: InboxRow | null | undefined;
    try {
      let history = callerHistory;
      let holdsStoredTranscript = false;
      const pendingInbox = admission.read?.pendingInbox;
      const inputRowId = admission.read?.inputRowId;
      const storedInput = inputUnderLease && inputRowId !== undefined ? { platformId: platformIdOf(inputUnderLease.message), rowId: inputRowId } : undefined;
      if (admission.waited || admission.contended || !historyGiven) {
        if (announcedWait) turn.status("lifecycle", SESSION_FREE_NOTICE);
        const reloaded = admission.read ? reloadFromRead(admission.read, callerHistory) : await reloadUnderLease(store, sessionId, callerHistory);
        turn.moveTo(reloaded.sessionId, reloaded.rowKnown);
        history = reloaded.history;
        holdsStoredTranscript = reloaded.holdsStoredTranscript;
      }
      result = await this.runTurn(turn, options, history, { holdsStoredTranscript, pendingInbox, storedInput });
    } finally {
      await refresher.stop();
      await this.beforeRelease?.().catch(() => undefined);
      try {
        if (options.readHeadOnRelease) headAfterRelease = await store.releaseSessionTurnLeaseAndReadHead(conversationId, holder);
        else await store.releaseSessionTurnLease(conversationId, holder);
      } catch (err) {
        // It expires on its own; the next holder waits at most the TTL.
        turn.emit("status", { level: "warn", text: `lease release failed: ${errorText(err)}` });
      }
      turn.releasedLease();
    }
    return headAfterRelease === undefined ? result : { ...result, headAfterRelease };
  }

  /** Admitted (or running without a lease): gather the input, run the loop, shape the result. */
  /** `underLease`: what admission read in its transaction, beyond the history. */
  private async runTurn(
    turn: Turn,
    options: RunConversationOptions,
    history: ConversationMessage[],
    underLease: UnderLease = { holdsStoredTranscript: false },
  ): Promise<TurnResult> {
    const userMessages: ConversationMessage[] = [];
    const given = turn.inputMessage();
    if (given) userMessages.push(given);
    let endRecords: EndRecordsFor | null = null;
    let steer: SteerFn | null = null;
    let overrides: TurnOverrides | null = null;
    if (options.admittedInput) {
      let admitted;
      try {
        admitted = await options.admittedInput({
          sessionId: turn.sessionId ?? "",
          history,
          sessionRowKnown: turn.sessionRowKnown,
          ...(underLease.pendingInbox ? { pendingInbox: underLease.pendingInbox } : {}),
        });
      } catch (err) {
        return failedBeforeLoop(turn, history, `admitted_input: ${errorText(err)}`, "exception", TURN_FAILURE_NOTICE);
      }
      if (!admitted) return skippedResult(turn, history);
      for (const input of admitted.messages) userMessages.push(userMessageFromAdmitted(input));
      endRecords = admitted.endRecords ?? null;
      steer = admitted.steer ?? null;
      overrides = admitted.settings ?? null;
    } else if (!given) {
      return skippedResult(turn, history);
    }
    const fresh = await withoutStoredInputs(turn, userMessages, history, { holdsStoredTranscript: holdsEveryStoredInput(turn, userMessages, underLease) });

    turn.emit("turn.started", { platform: this.platform, inputs: fresh.length, ...(overrides ? { settings: overrides.name } : {}) });
    const firstText = given ? modelText(given) : (fresh[0] ? modelText(fresh[0]) : null);
    const systemMessage = options.systemMessage ?? overrides?.systemPrompt ?? this.systemPrompt;
    let loop: LoopResult;
    try {
      loop = await this.runLoop(firstText, systemMessage, history, { turn, userMessages: fresh, endRecords, steer, overrides });
    } catch (err) {
      loop = {
        finalResponse: TURN_FAILURE_NOTICE,
        messages: [...history, ...fresh],
        failed: true,
        error: `exception: ${errorText(err)}`,
        failureReason: "exception",
      };
    }
    if (endRecords && !turn.endRecordsStored && !turn.leaseLost) {
      // The loop ended without its last flush (it threw, or was replaced): record the outcome.
      await turn.flush(loop.messages, history, endRecords({ status: outcomeOf(loop), finalResponse: loop.finalResponse, usage: loop.usage ?? NO_USAGE }));
    }
    return loopTurnResult(turn, loop, endRecords !== null && !turn.endRecordsStored);
  }
}
