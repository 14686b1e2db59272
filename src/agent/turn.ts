// One run of Agent.runConversation and the state that lives and dies with it: the session it is
// on, the lease it holds (conversation id and holder), its interrupt flags, what it has stored,
// the input it may carry out, and whether it lost the lease. The Agent keeps settings and
// collaborators only; loop, compaction and persistence work through this object.
import type { ConversationMessage, SessionStore, TurnEndRecords } from "../state/types.js";
import { PERSIST_AFTER_ADMISSION_INTERRUPT, userMessageFromAdmitted } from "./messages.js";
import { ensureSessionRow, isTurnLeaseLost, unflushedMessages, writeFenced } from "./persistence.js";
import type { ToolRegistry } from "./tools/registry.js";
import type { AdmittedUserInput, CompactionOptions, InterruptOptions } from "./turn-types.js";
import type { AgentEvent, AgentEventKind, ModelProvider, StatusKind } from "./types.js";

/** What a turn reads of its agent. Read live, so a setting changed mid-turn applies from then on. */
export interface TurnSettings {
  readonly store: SessionStore | null;
  readonly persist: boolean;
  readonly platform: string;
  readonly provider: ModelProvider;
  readonly tools: ToolRegistry;
  readonly maxSteps: number;
  readonly compaction: CompactionOptions | null;
  readonly leaseTtlSeconds: number;
  readonly onEvent: ((event: AgentEvent) => void) | null;
  readonly statusCallback: ((kind: StatusKind, text: string) => void) | null;
}

/** A turn seen from outside (Agent.lastTurn): what it is doing, read-only. */
export interface TurnView {
  /** The session the turn is on: the one it started on, its tip after a wait, or a compaction child. */
  readonly sessionId: string | null;
  /** True once the session's row is known to exist (then no write looks for it). */
  readonly sessionRowKnown: boolean;
  /** The conversation whose lease the turn took; null when it ran without one. */
  readonly conversationId: string | null;
  /** The lease holder while the turn holds the lease (every flush is fenced by it); null after release. */
  readonly holder: string | null;
  /** Set by interrupt(); cleared when the turn ends. */
  readonly interruptRequested: boolean;
  readonly interruptMessage: string | null;
  readonly hardCancelRequested: boolean;
  /** A fenced write was refused, or compaction found the lease gone: nothing more is stored. */
  readonly leaseLost: boolean;
  /** The message of the last failed write. */
  readonly lastFlushError: string | null;
  /** Delivery rows the turn's end records created. */
  readonly deliveryIds: readonly number[];
}

/** What a fenced flush did. */
export type FlushOutcome =
  | { kind: "ok"; messageIds: number[]; deliveryIds: number[] }
  /** The fence refused the write (another holder, or no lease): nothing was written. */
  | { kind: "leaseLost" }
  | { kind: "failed"; error: Error };

export interface TurnStart {
  sessionId: string | null;
  sessionRowKnown?: boolean;
  /** The input runConversation was given; null when it comes from admittedInput. */
  input?: AdmittedUserInput | null;
}

function nothingWritten(): FlushOutcome {
  return { kind: "ok", messageIds: [], deliveryIds: [] };
}

export class Turn implements TurnView {
  private currentSessionId: string | null;
  private rowKnown: boolean;
  private leasedConversationId: string | null = null;
  private leaseHolder: string | null = null;
  private interrupted = false;
  private interruptText: string | null = null;
  private hardCancel = false;
  private lost = false;
  private flushError: string | null = null;
  private endRecordsWritten = false;
  private ended = false;
  private readonly abort = new AbortController();
  /** Message objects this turn stored (or found stored): never written again. */
  private readonly stored = new WeakSet<ConversationMessage>();
  private readonly createdDeliveryIds: number[] = [];
  private readonly input: AdmittedUserInput | null;
  private inputBuilt: ConversationMessage | null = null;

  constructor(
    readonly settings: TurnSettings,
    start: TurnStart,
  ) {
    this.currentSessionId = start.sessionId;
    this.rowKnown = start.sessionRowKnown ?? false;
    this.input = start.input ?? null;
  }

  get sessionId(): string | null {
    return this.currentSessionId;
  }

  get sessionRowKnown(): boolean {
    return this.rowKnown;
  }

  get conversationId(): string | null {
    return this.leasedConversationId;
  }

  get holder(): string | null {
    return this.leaseHolder;
  }

  get interruptRequested(): boolean {
    return this.interrupted;
  }

  get interruptMessage(): string | null {
    return this.interruptText;
  }

  get hardCancelRequested(): boolean {
    return this.hardCancel;
  }

  get leaseLost(): boolean {
    return this.lost;
  }

  get lastFlushError(): string | null {
    return this.flushError;
  }

  get deliveryIds(): readonly number[] {
    return this.createdDeliveryIds;
  }

  /** True once a flush carrying the end records succeeded. */
  get endRecordsStored(): boolean {
    return this.endRecordsWritten;
  }

  /** Aborted by interrupt(): stops a lease wait, a model call and tools at once. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * The user message of the input runConversation was given, built once (when first asked for:
   * at admission, or when it is carried out of an interrupted wait); null without one.
   */
  inputMessage(): ConversationMessage | null {
    if (this.input && !this.inputBuilt) this.inputBuilt = userMessageFromAdmitted(this.input);
    return this.inputBuilt;
  }

  /** The input, flagged to be stored by the next turn (interrupted before admission). */
  carriedInput(): ConversationMessage | null {
    const message = this.inputMessage();
    return message ? { ...message, [PERSIST_AFTER_ADMISSION_INTERRUPT]: true } : null;
  }

  /**
   * Soft: stop at the next safe point keeping what was written. Hard: also drop partial text and
   * the unadmitted input. A no-op once the turn has ended.
   */
  interrupt(message?: string | null, options?: InterruptOptions): void {
    if (this.ended) return;
    this.interrupted = true;
    if (message !== undefined && message !== null) this.interruptText = message;
    if (options?.hardCancel) this.hardCancel = true;
    this.abort.abort();
  }

  /** Admitted: from now on every flush is fenced by `holder`. */
  holdLease(conversationId: string, holder: string): void {
    this.leasedConversationId = conversationId;
    this.leaseHolder = holder;
    this.lost = false;
  }

  releasedLease(): void {
    this.leaseHolder = null;
  }

  /** The lease is gone (compaction found it taken over): the turn stores nothing more. */
  markLeaseLost(): void {
    this.lost = true;
  }

  /** Go on in another session: the tip after a wait, or a compaction child. Null leaves the row flag. */
  moveTo(sessionId: string, rowKnown: boolean | null): void {
    this.currentSessionId = sessionId;
    if (rowKnown !== null) this.rowKnown = rowKnown;
  }

  /** An input already in the store (stored at admission, or a crashed turn flushed it): never written again. */
  markStored(message: ConversationMessage): void {
    this.stored.add(message);
  }

  /**
   * The turn moved on (compaction) from the session these messages were stored in: those it had
   * marked stored are written again, to the session it is on now.
   */
  storeAgainHere(messages: readonly ConversationMessage[]): void {
    for (const message of messages) if (this.stored.delete(message)) delete message._row_id;
  }

  /**
   * The fenced flush: writes the messages not stored yet (those after `history`, plus carried
   * inputs inside it) in one batch guarded by the lease holder, with the end records when given.
   * Each message object is written once. Nothing to write, or persistence off: ok.
   */
  async flush(
    messages: readonly ConversationMessage[],
    history: readonly ConversationMessage[] | null,
    endRecords?: TurnEndRecords,
  ): Promise<FlushOutcome> {
    const { store, persist, platform } = this.settings;
    const sessionId = this.currentSessionId;
    if (!store || !persist || !sessionId) return nothingWritten();
    const pending = unflushedMessages(this.stored, messages, history);
    if (pending.length === 0 && !endRecords) return nothingWritten();
    try {
      if (!this.rowKnown) {
        await ensureSessionRow(store, sessionId, platform);
        this.rowKnown = true;
      }
      const written = await writeFenced(store, sessionId, pending, { holder: this.leaseHolder, endRecords });
      pending.forEach((message, index) => {
        this.stored.add(message);
        // Stored now: no longer carried, so a later reload plus this object cannot write it twice.
        delete message[PERSIST_AFTER_ADMISSION_INTERRUPT];
        const rowId = written.messageIds[index];
        if (typeof rowId === "number") message._row_id = rowId;
      });
      this.createdDeliveryIds.push(...written.deliveryIds);
      if (endRecords) this.endRecordsWritten = true;
      return { kind: "ok", messageIds: written.messageIds, deliveryIds: written.deliveryIds };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.flushError = error.message;
      if (!isTurnLeaseLost(err)) return { kind: "failed", error };
      this.lost = true;
      return { kind: "leaseLost" };
    }
  }

  emit(kind: AgentEventKind, data: Record<string, unknown>): void {
    try {
      this.settings.onEvent?.({ kind, sessionId: this.currentSessionId ?? "", data });
    } catch {
      // A listener's failure is not the turn's.
    }
  }

  status(kind: StatusKind, text: string): void {
    try {
      this.settings.statusCallback?.(kind, text);
    } catch {
      // As above.
    }
    this.emit("status", { level: kind, text });
  }

  /** The turn is over: later interrupts do nothing, and no interrupt state is left behind. */
  end(): void {
    this.ended = true;
    this.interrupted = false;
    this.interruptText = null;
    this.hardCancel = false;
  }
}
