// Turn workers: a BullMQ job is a wake-up for its session. The turn runs for the HEAD of the
// session's pending inbox (read under the lease), so per-session order is strict FIFO whatever
// order jobs are picked in; a job whose row was already consumed completes as a no-op.
import { Worker, type Job } from "bullmq";
import type { RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { Agent, type AdmittedInput, type AdmittedUserInput, type TurnOverrides, type TurnResult, type TurnUsage } from "../agent/index.js";
import { channelSettingsFor, type ChannelSettings } from "./channel-settings.js";
import type { AgentEvent, ModelProvider } from "../agent/types.js";
import type { CreateSessionInput, DeliveryInsert, InboxRow, SessionStore, TurnEndRecords, UsageInsert } from "../state/types.js";
import { isEphemeralKind, type EventPublisher, type InterruptRequest } from "../bus/types.js";
import { busyModeFor, type BusyMode, type CoreConfig } from "./config.js";
import type { DeliveryToSend } from "./delivery-worker.js";
import type { GatewayMetrics } from "./metrics.js";
import { LocalWakeUps, type WakeUp, type WakeUpSink } from "./local-wake-ups.js";
import { TURN_QUEUE, closeWorker, conversationIdOfJob, withTimeout, workerConnection, type TurnJobData } from "./queues.js";
import { inboundOf } from "./inbox-payload.js";
import { QueuedAnnouncer } from "./queued-notices.js";
import { ToolCatalog } from "./tool-catalog.js";
import { hasMedia, mediaOfRow, rejectedMediaNote, type MediaFetcher } from "./turn-media.js";
import type { ReplyStream, TurnOutcome } from "./types.js";

export interface TurnWorkerDeps {
  config: CoreConfig;
  store: SessionStore;
  provider: ModelProvider;
  /** The tools each platform's turns are offered; default: the built-in ones. */
  tools?: ToolCatalog;
  events: EventPublisher;
  metrics: GatewayMetrics;
  logger: Logger;
  redisOptions: RedisOptions;
  /** Ask running turns on a session to stop (busy mode 'interrupt'). */
  publishInterrupt: (request: InterruptRequest) => Promise<void>;
  /** Platforms whose replies go out through the deliveries ledger. */
  sendingPlatforms: () => Set<string>;
  /**
   * Send the ledger rows a turn's final flush created: at once, each under its ledger claim, with
   * a delivery job only for a retry (DeliveryDispatcher.deliverNow).
   */
  dispatchDeliveries: (deliveries: readonly DeliveryToSend[]) => Promise<void>;
  /**
   * Add a fresh wake-up job for a conversation's head, under a job id of its own (never one that
   * may still be active: that add would be a no-op); false when Redis refused it. With in-process
   * wake-ups a turn hands on in memory while a slot is free, and through this otherwise.
   */
  wakeAgain: (conversationId: string, inboxId: number, platform: string) => Promise<boolean>;
  /**
   * Take wake-ups in memory (local-wake-ups.ts) from this process's ingress, besides BullMQ's: a
   * wake-up that failed (a turn to retry) goes to `retryLater`, which enqueues it with a delay.
   */
  inProcess?: {
    retryLater: (wakeUp: WakeUp, err: Error) => void;
    /** Whether another process takes wake-ups from the shared queue now (local-wake-ups.ts). */
    sharing: () => boolean;
    /** Calls `listener` whenever `sharing()` may have changed; returns its removal. */
    onSharingChange: (listener: () => void) => () => void;
  };
  /** The platform adapter's fetchMedia: downloads the files a message referenced when its turn takes it. */
  fetchMedia?: MediaFetcher;
  /** A streamed reply for platforms that edit messages (Slack, Discord); null for others. */
  openStream?: (platform: string, target: Record<string, unknown>) => ReplyStream | null;
  /** The platform's turn-start signal (typing indicator; WhatsApp marks the message read). */
  typing?: (platform: string, target: Record<string, unknown>) => Promise<void>;
  /**
   * The outcome of each row a turn answered, once its lease is released: this process's ingress
   * answers the requests waiting on them from memory, without reading their rows back.
   */
  onOutcomes?: (outcomes: TurnOutcome[]) => void;
  /** Each stored turn's usage, with its conversation's routing key (the usage limits count its tokens). */
  onUsage?: (usage: UsageInsert, conversationKey: string) => void;
}

/** How long the lease waits for the turn's events to reach Redis (an outage must not hold it). */
const EVENTS_FLUSH_TIMEOUT_MS = 2_000;

/** How long past the shutdown grace the queue's worker may take to close. */
const WORKER_CLOSE_MARGIN_MS = 10_000;

/**
 * In-memory wake-ups per slot that may wait for one while no other process takes turns: enough for
 * a burst of new conversations; past it they go through the queue, so memory stays bounded.
 */
const BACKLOG_PER_SLOT = 8;

/** Turns one job runs back to back for its session when it cannot hand on (Redis refuses wake-ups). */
const MAX_TURNS_PER_JOB = 50;

/** What one turn learns as it runs: its input rows, its streamed reply, when it began to wait. */
interface TurnState {
  inboxIds: number[];
  /** The latest event publish (publishes on one connection complete in order). */
  published: Promise<void>;
  stream: ReplyStream | null;
  waitStarted: number | null;
  /** What the turn's end records complete (the last asked for: the one stored, if any). */
  completion: { rows: InboxRow[]; status: TurnOutcome["status"]; reply: string } | null;
  /** The ledger rows those end records insert, in order. */
  deliveries: DeliveryInsert[];
  /** The model the turn asks (its channel's, else the provider's). */
  model?: string;
  /** The usage those end records store, and the routing key of the conversation it counts towards. */
  usage?: UsageInsert;
  conversationKey?: string;
}

interface RunningTurn {
  agent: Agent;
  state: TurnState;
  /** performance.now() when the turn was set up (before it waits for the lease). */
  began: number;
}

/** A caught-up interrupt and a turn's start are timed on two clocks read moments apart. */
const INTERRUPT_AGE_TOLERANCE_MS = 250;

/** Is the request meant for a turn with these inputs that began `ageMs` ago? */
export function isInterruptFor(request: InterruptRequest, turn: { inboxIds: number[]; ageMs: number }): boolean {
  // Busy mode 'interrupt': only turns working on input older than the new message.
  if (request.beforeInboxId !== undefined && !turn.inboxIds.some((id) => id < request.beforeInboxId!)) return false;
  // Caught up after a reconnect: a turn that began after the request was published is not its target.
  if (request.ageMs !== undefined && turn.ageMs < request.ageMs - INTERRUPT_AGE_TOLERANCE_MS) return false;
  return true;
}

export class TurnWorkers {
  private worker: Worker<TurnJobData> | null = null;
  /** Turns running in this process, by conversation id: interrupts find them here. */
  private readonly running = new Map<string, Set<RunningTurn>>();
  private readonly tools: ToolCatalog;
  /** In-process wake-ups and the slots every wake-up runs in; null when BullMQ alone wakes turns. */
  private readonly local: LocalWakeUps | null;
  /** Announces the rows of the in-process wake-ups (queued-notices.ts); null without them. */
  private readonly announcer: QueuedAnnouncer | null;
  private stopping = false;
  private takingJobs = true;
  private readonly offSharingChange: (() => void) | null;

  constructor(private readonly deps: TurnWorkerDeps) {
    this.tools = deps.tools ?? new ToolCatalog(null, deps.logger);
    const inProcess = deps.inProcess;
    const concurrency = deps.config.workerConcurrency;
    this.local = inProcess
      ? new LocalWakeUps(
          { concurrency, backlog: concurrency * BACKLOG_PER_SLOT, sharing: inProcess.sharing, onFull: () => this.takeJobsWhileRoom() },
          (wakeUp) => this.wake(wakeUp),
          inProcess.retryLater,
        )
      : null;
    this.offSharingChange = inProcess?.onSharingChange(() => this.takeJobsWhileRoom()) ?? null;
    this.announcer = inProcess ? new QueuedAnnouncer(deps.events) : null;
  }

  /**
   * Where this process's ingress hands new rows' wake-ups over in memory; null without in-process
   * wake-ups. Their notices are published here first, on the bus the turns publish on.
   */
  get wakeUpSink(): WakeUpSink | null {
    const { local, announcer } = this;
    if (!local || !announcer) return null;
    return {
      announcer: announcer.id,
      offer: (wakeUps, notices) => {
        if (!local.accepting) return null;
        const rest = local.offer(wakeUps);
        if (rest.length === 0) {
          void announcer.announce(notices);
          return { rest, announced: Promise.resolve() };
        }
        const spilled = new Set(rest.map((wakeUp) => wakeUp.inboxId));
        // Taken ones: out before their turn's events, on the same bus. Spilled ones: out before
        // their job is added, since a worker elsewhere may start at once.
        void announcer.announce(notices.filter((notice) => !spilled.has(notice.data.inbox_id)));
        return { rest, announced: announcer.announce(notices.filter((notice) => spilled.has(notice.data.inbox_id))) };
      },
    };
  }

  /**
   * With in-process wake-ups and another process on the queue: take BullMQ jobs only while a slot
   * is free. A job taken with every slot busy would wait here while the other's free slot could
   * run it. Alone, jobs wait here for a slot as in-memory wake-ups do.
   */
  private takeJobsWhileRoom(): void {
    const worker = this.worker;
    const local = this.local;
    if (!worker || !local || this.stopping) return;
    const take = !local.isFull() || !this.deps.inProcess?.sharing();
    if (take === this.takingJobs) return;
    this.takingJobs = take;
    if (take) void worker.resume();
    else void worker.pause(true);
  }

  start(): void {
    const { config, redisOptions } = this.deps;
    const fromJob = (job: Job<TurnJobData>): WakeUp => ({
      conversationId: conversationIdOfJob(job.data),
      inboxId: job.data.inboxId,
      ...(job.data.platform ? { platform: job.data.platform } : {}),
    });
    const local = this.local;
    // With in-process wake-ups, a BullMQ wake-up takes one of the same slots: one concurrency in all.
    const processor = local ? (job: Job<TurnJobData>) => local.withSlot(() => this.wake(fromJob(job))) : (job: Job<TurnJobData>) => this.wake(fromJob(job));
    this.worker = new Worker<TurnJobData>(TURN_QUEUE, processor, {
      connection: workerConnection(redisOptions),
      prefix: config.queuePrefix,
      concurrency: config.workerConcurrency,
      // A dead worker's job is picked up again quickly; the lease of the dead holder is reaped.
      lockDuration: 15_000,
      stalledInterval: 5_000,
      maxStalledCount: 5,
    });
    this.worker.on("error", (err) => this.deps.logger.warn({ err: err.message }, "turn worker error"));
    this.worker.on("failed", (job, err) => this.deps.logger.warn({ jobId: job?.id, err: err.message }, "turn job failed"));
  }

  /** Apply an interrupt to the matching turns running in this process. */
  interruptLocal(request: InterruptRequest): number {
    const turns = this.running.get(request.sessionId);
    if (!turns) return 0;
    let count = 0;
    const now = performance.now();
    for (const turn of turns) {
      if (!isInterruptFor(request, { inboxIds: turn.state.inboxIds, ageMs: now - turn.began })) continue;
      turn.agent.interrupt(request.text, { hardCancel: request.hard ?? false });
      count++;
    }
    return count;
  }

  runningCount(): number {
    let n = 0;
    for (const turns of this.running.values()) n += turns.size;
    return n;
  }

  /** Stop taking jobs; running turns get `graceMs` to finish, then are interrupted. */
  async stop(graceMs: number): Promise<void> {
    if (!this.worker) return;
    const worker = this.worker;
    this.stopping = true;
    this.offSharingChange?.();
    const closing = Promise.all([
      // Its active jobs are interrupted at graceMs like every turn; past that plus a margin it is given up.
      closeWorker(worker, graceMs + WORKER_CLOSE_MARGIN_MS).then((closed) => {
        if (!closed) this.deps.logger.warn("the turn queue's worker did not close in time; left to disconnect");
      }),
      this.local?.close(),
    ]);
    const deadline = setTimeout(() => {
      for (const turns of this.running.values()) for (const turn of turns) turn.agent.interrupt("server shutting down", { hardCancel: false });
    }, graceMs);
    try {
      await closing;
    } finally {
      clearTimeout(deadline);
      this.worker = null;
    }
  }

  /**
   * One wake-up, from BullMQ or in memory: the turns of the conversation's head it may run. Every
   * turn goes for the lease without waiting behind a live holder, which reads the head again in
   * the transaction that releases the lease (and so finds this wake-up's row, recorded before),
   * while other conversations use the slot meanwhile.
   */
  private async wake(wakeUp: WakeUp): Promise<void> {
    const { conversationId, platform } = wakeUp;
    // A new row's wake-up (and a hand-on) names its platform: straight to the lease, whose
    // transaction reads the head. Others (and busy mode 'interrupt', which acts on the row first)
    // read the row before.
    const known = platform !== undefined ? this.busyModeOf(platform, wakeUp.row) : null;
    const straight = platform !== undefined && known !== null && known !== "interrupt";
    let next: NextTurn | null = straight ? { id: wakeUp.inboxId, platform, row: wakeUp.row } : nextTurnOf(await this.headToRun(wakeUp));
    for (let turns = 0; next; turns++) {
      // One turn per slot while it can be handed on: the session's next turn queues behind the
      // wake-ups of other sessions already waiting, instead of keeping this slot for as long as
      // its messages keep coming (in memory, or as a job). Only when Redis refuses a job does
      // this wake-up go on itself (up to a cap; then the reconciler enqueues the row once Redis is back).
      if (turns > 0 && ((await this.handOn(conversationId, next)) || turns >= MAX_TURNS_PER_JOB)) return;
      const ran = await this.runTurn(conversationId, next.platform, next.row);
      // Another turn has the conversation: it reads the head after its release.
      if (ran.heldElsewhere) return;
      next = nextTurnOf(ran.headAfterRelease !== undefined ? ran.headAfterRelease : await this.headIfFree(conversationId));
    }
  }

  /** Before the first turn: the row, the conversation's head and its holder in one read; the head to run, or null. */
  private async headToRun({ conversationId, inboxId }: WakeUp): Promise<InboxRow | null> {
    const view = await this.deps.store.wakeUpView(conversationId, inboxId);
    const row = view.row;
    if (row?.status === "pending" && this.busyModeOf(row.platform, row) === "interrupt") {
      await this.deps.publishInterrupt({ sessionId: conversationId, text: "superseded by a newer message", hard: false, beforeInboxId: row.id }).catch(() => undefined);
    }
    // A live turn on this conversation reads the head after its release: no need to hold a slot.
    if (view.liveHolder) return null;
    // A turn consumes the head, which may be another wake-up's row (lost with a dead worker, or
    // returned as a no-op above).
    return row?.status === "pending" ? row : view.head;
  }

  /** After a turn whose release could not read the head: the head, unless another turn already took the lease. */
  private async headIfFree(conversationId: string): Promise<InboxRow | null> {
    const view = await this.deps.store.wakeUpView(conversationId, null);
    return view.liveHolder ? null : view.head;
  }

  /** Hand the conversation's next row on to a later wake-up; false when that could not be arranged. */
  private handOn(conversationId: string, next: NextTurn): Promise<boolean> {
    // In memory while a slot is free; else through BullMQ, behind what already waits there.
    if (this.local?.handOn({ conversationId, inboxId: next.id, platform: next.platform, ...(next.row ? { row: next.row } : {}) })) return Promise.resolve(true);
    return this.deps.wakeAgain(conversationId, next.id, next.platform);
  }

  /**
   * One turn for the head of the conversation's inbox, for a wake-up of `platform` (its busy mode
   * and tools). What it found: nothing to do (skipped), another holder (heldElsewhere), and the
   * head as its lease's release left it (headAfterRelease).
   */
  private async runTurn(conversationId: string, platform: string, row?: InboxRow): Promise<Pick<TurnResult, "heldElsewhere" | "headAfterRelease">> {
    const { config, metrics } = this.deps;
    const state: TurnState = { inboxIds: [], published: Promise.resolve(), stream: null, waitStarted: null, completion: null, deliveries: [] };
    // The agent starts from the conversation id: under the lease it resolves the tip and reloads
    // the transcript there (no read of the tip before the lease, which could be stale anyway).
    const turn: RunningTurn = { agent: this.createAgent(conversationId, conversationId, platform, state), state, began: performance.now() };
    this.track(conversationId, turn);
    metrics.runningTurns.inc();
    const started = Date.now();
    try {
      // No caller history: the agent reloads the transcript under the lease, never a stale read.
      const mode = this.busyModeOf(platform, row) ?? busyModeFor(config, platform);
      const result = await turn.agent.runConversation(null, {
        // The head of the inbox is read in the lease's transaction too, and again in its release's.
        pendingInboxLimit: this.headSize(mode),
        admittedInput: (ctx) => this.admitHead(conversationId, mode, ctx, state),
        conversationId,
        // The row this turn is most likely for: the admission's own step stores its message when it is the head.
        ...(row && expectsPlainInput(row, mode) ? { expectedInput: { inboxId: row.id, input: userMessageOf(row), session: sessionInputOf(row) } } : {}),
        giveUpWhenHeld: true,
        readHeadOnRelease: true,
      });
      // After the release (runConversation returned): a waiter answered now finds the lease free.
      if (result.endRecordsStored && state.completion) this.reportOutcomes(state.completion);
      if (!result.skipped) await this.afterTurn(conversationId, platform, result, state, started);
      return result;
    } finally {
      await state.stream?.close().catch(() => undefined);
      metrics.runningTurns.dec();
      this.untrack(conversationId, turn);
    }
  }

  /** An agent for one turn; its events go to the bus (under the conversation id) and the stream. */
  private createAgent(conversationId: string, tip: string, platform: string, state: TurnState): Agent {
    const { store, config, metrics } = this.deps;
    return new Agent({
      store,
      provider: this.deps.provider,
      sessionId: tip,
      platform,
      tools: this.tools.forPlatform(platform),
      systemPrompt: config.systemPrompt,
      leaseTtlSeconds: config.leaseTtlSeconds,
      leaseWaitSeconds: config.leaseWaitSeconds,
      compaction: config.compaction,
      onEvent: (event: AgentEvent) => {
        if (event.kind === "turn.waiting" && state.waitStarted === null) {
          state.waitStarted = Date.now();
          metrics.leaseWaits.inc();
        }
        if (event.kind === "turn.started" && state.waitStarted !== null) metrics.leaseWaitSeconds.observe((Date.now() - state.waitStarted) / 1000);
        if (event.kind === "delta" && state.stream && typeof event.data.text === "string") state.stream.push(event.data.text);
        const data = { ...event.data, turn_session_id: event.sessionId, inbox_ids: state.inboxIds };
        // Streamed text goes out ahead of the turn's next stored event, which the release waits for.
        if (isEphemeralKind(event.kind)) {
          this.deps.events.publishLive(conversationId, event.kind, data);
          return;
        }
        state.published = this.deps.events.publish(conversationId, event.kind, data).then(
          () => undefined,
          () => undefined,
        );
      },
      // The turn's events reach Redis before the next holder can start: one order in every process.
      beforeRelease: () => withTimeout(state.published, EVENTS_FLUSH_TIMEOUT_MS, "publishing the turn's events").catch(() => undefined),
    });
  }

  /**
   * Under the lease: the head of the inbox (all pending, up to a cap, in collect mode) is this
   * turn's input. In steer mode, rows that arrive while it runs join it before its later model
   * steps (steerIn); the turn's end records then complete them too.
   */
  private async admitHead(
    conversationId: string,
    mode: BusyMode,
    { sessionId, sessionRowKnown, pendingInbox }: { sessionId: string; sessionRowKnown: boolean; pendingInbox?: InboxRow[] },
    state: TurnState,
  ): Promise<AdmittedInput | null> {
    const head = pendingInbox ?? (await this.deps.store.pendingInbox(conversationId, this.headSize(mode)));
    if (head.length === 0) return null;
    this.announcer?.taking(head);
    /** Every row this turn answers: the head, then the steered ones. */
    const answered = [...head];
    state.inboxIds = answered.map((r) => r.id);
    // The reply goes where the head's last message asked for it (the stream was opened there).
    const replyRow = head[head.length - 1];
    const inbound = inboundOf(replyRow);
    const target = inbound.replyTarget;
    // The reply's channel decides the turn's settings (channel-settings.ts).
    const channel = channelSettingsFor(this.deps.config.channels, inbound);
    state.model = channel?.model ?? this.deps.provider.model;
    if (target && channel?.replyStyle !== "final") {
      state.stream = this.deps.openStream?.(replyRow.platform, target) ?? null;
      this.signalTurnStart(replyRow.platform, target);
    }
    // The reload under the lease read the session row: read it again only when it was not found.
    if (!sessionRowKnown) await this.ensureSessionRow(sessionId, head[0]);
    return {
      messages: await Promise.all(head.map((r) => this.inputOf(conversationId, r))),
      endRecords: ({ status, finalResponse, usage }) => {
        state.completion = { rows: [...answered], status, reply: finalResponse };
        const records = this.endRecords(answered, replyRow, sessionId, status, finalResponse, { claimed: streamEnded(state), usage, model: state.model ?? this.deps.provider.model });
        state.deliveries = records.deliveries ?? [];
        // The reply is known: the streamed message shows it now, while the flush records it.
        const reply = state.deliveries[0];
        if (state.stream && reply) state.stream.showFinal?.(reply.text);
        if (records.usage) {
          state.usage = records.usage;
          state.conversationKey = inboundOf(replyRow).sessionKey;
        }
        return records;
      },
      ...(mode === "steer" ? { steer: () => this.steerIn(conversationId, answered, state) } : {}),
      ...(channel ? { settings: this.overridesOf(channel, replyRow.platform) } : {}),
    };
  }

  /** A channel's settings as the agent takes them for one turn. */
  private overridesOf(channel: ChannelSettings, platform: string): TurnOverrides {
    return {
      name: channel.name,
      ...(channel.systemPrompt ? { systemPrompt: channel.systemPrompt } : {}),
      ...(channel.model ? { model: channel.model } : {}),
      ...(channel.mcpServers ? { tools: this.tools.forPlatform(platform, channel.mcpServers) } : {}),
    };
  }

  /**
   * The busy mode of a row's conversation: its channel's (channel-settings.ts), else its platform's.
   * Null when no row is at hand and some channel sets its own (the row must be read first).
   */
  private busyModeOf(platform: string, row?: InboxRow): BusyMode | null {
    const { config } = this.deps;
    if (row) return channelSettingsFor(config.channels, inboundOf(row))?.busyMode ?? busyModeFor(config, platform);
    return config.channels.some((channel) => channel.busyMode !== undefined) ? null : busyModeFor(config, platform);
  }

  /** How many pending rows one turn takes as its input. */
  private headSize(mode: BusyMode): number {
    return mode === "collect" ? this.deps.config.collectMaxMessages : 1;
  }

  private reportOutcomes({ rows, status, reply }: NonNullable<TurnState["completion"]>): void {
    this.deps.onOutcomes?.(rows.map((row) => ({ inboxId: row.id, sessionId: row.session_id, status, reply, receivedAt: row.received_at })));
  }

  /** Best effort and not awaited: the turn never waits on, or fails for, a typing indicator. */
  private signalTurnStart(platform: string, target: Record<string, unknown>): void {
    const typing = this.deps.typing;
    if (!typing) return;
    typing(platform, target).catch((err: unknown) =>
      this.deps.logger.debug({ platform, err: err instanceof Error ? err.message : String(err) }, "turn-start signal failed"),
    );
  }

  /**
   * Busy mode 'steer', under the turn's lease (so no other turn takes these rows): the pending rows
   * that are not this turn's yet join it. Their jobs find them consumed once the turn has recorded
   * its outcome; a row still pending when the turn ends (it ended first) runs as the next turn.
   */
  private async steerIn(conversationId: string, answered: InboxRow[], state: TurnState): Promise<AdmittedUserInput[]> {
    const cap = this.deps.config.collectMaxMessages;
    const taken = new Set(answered.map((r) => r.id));
    const pending = await this.deps.store.pendingInbox(conversationId, answered.length + cap);
    // A command row is pending only for the moment ingress takes to answer it: never a turn's input.
    const fresh = pending.filter((r) => !taken.has(r.id) && !r.payload.command).slice(0, cap);
    if (fresh.length === 0) return [];
    this.announcer?.taking(fresh);
    answered.push(...fresh);
    // A new array: events already handed to the bus keep the ids they were published with.
    state.inboxIds = answered.map((r) => r.id);
    return Promise.all(fresh.map((r) => this.inputOf(conversationId, r)));
  }

  /** The turn's input for one row: its text, and its images (downloaded now for platform files). */
  private async inputOf(conversationId: string, row: InboxRow): Promise<AdmittedUserInput> {
    const input = userMessageOf(row);
    if (!hasMedia(row)) return input;
    const { store, config } = this.deps;
    const media = await mediaOfRow(row, { store, settings: config.media, fetchMedia: this.deps.fetchMedia ?? null });
    input.attachments = media.attachments;
    if (media.rejected.length > 0) {
      // Said to the model (so the reply can say it) and kept in the transcript's display metadata.
      input.apiText = [input.apiText ?? input.text, rejectedMediaNote(media.rejected)].filter(Boolean).join("\n");
      input.displayMetadata = { ...input.displayMetadata, attachments_rejected: media.rejected };
      const text = `some attachments were not included: ${media.rejected.map((r) => `${r.name} (${r.reason})`).join("; ")}`;
      void this.deps.events.publish(conversationId, "status", { level: "warn", text, inbox_ids: [row.id] }).catch(() => undefined);
    }
    return input;
  }

  /** Metrics, retry decisions, the streamed message and the reply's delivery. */
  private async afterTurn(conversationId: string, platform: string, result: TurnResult, state: TurnState, started: number): Promise<void> {
    const { metrics, logger } = this.deps;
    const outcome = result.interrupted ? "interrupted" : result.failed ? "failed" : "completed";
    metrics.turns.inc({ platform, outcome });
    metrics.turnSeconds.observe({ platform }, (Date.now() - started) / 1000);
    if (result.failed && typeof result.error === "string" && result.error.startsWith("session_turn_lease_timeout")) {
      // Another turn holds the session for very long: try again later; the row stays pending.
      throw new Error(result.error);
    }
    // A committed final flush completed every input row in its transaction: no need to read them back.
    if (state.inboxIds.length > 0 && !result.endRecordsStored && (await this.stillPending(state.inboxIds))) {
      // The final flush did not land (fenced out, storage error): fail the job so it is retried.
      logger.warn({ inboxIds: state.inboxIds, reason: result.failureReason }, "turn ended without recording its outcome; retrying");
      throw new Error(`turn for inbox ${state.inboxIds.join(",")} did not record its outcome: ${String(result.failureReason ?? result.error ?? "unknown")}`);
    }
    if (result.endRecordsStored && state.usage) this.countUsage(state.usage, state.conversationKey ?? state.usage.sessionId);
    const shown = state.stream ? await this.finishStream(state.stream, result.deliveryIds, state.deliveries) : null;
    const toSend = result.deliveryIds.filter((id) => id !== shown);
    if (toSend.length > 0) {
      // By id: after a compaction the rows belong to the tip, not to the conversation id. After the
      // stream closed, so the final text is its last word (an edit of its message, or one post).
      await this.deps.dispatchDeliveries(deliveriesToSend(toSend, state.deliveries)).catch((err: Error) => logger.warn({ err: err.message }, "delivery dispatch failed; the reconciler retries"));
    }
  }

  /** A stored turn's tokens: in /metrics (per platform and model), and towards its user's and conversation's limits. */
  private countUsage(usage: UsageInsert, conversationKey: string): void {
    const { metrics } = this.deps;
    metrics.modelTokens.inc({ platform: usage.platform, model: usage.model, kind: "prompt" }, usage.promptTokens);
    metrics.modelTokens.inc({ platform: usage.platform, model: usage.model, kind: "completion" }, usage.completionTokens);
    this.deps.onUsage?.(usage, conversationKey);
  }

  /**
   * The final reply edits the streamed message instead of posting a second one; a stream that
   * posted nothing yet (the reply was done before its first post was due) posts nothing now, and
   * the delivery posts the final text once.
   */
  private async finishStream(stream: ReplyStream, deliveryIds: number[], deliveries: readonly DeliveryInsert[]): Promise<number | null> {
    const { messageId, shownText } = await stream.close().catch(() => ({ messageId: null, shownText: null }));
    const [deliveryId] = deliveryIds;
    if (!messageId || deliveryId === undefined) return null;
    // The message already shows the reply whole (showFinal): the delivery is done, with no call.
    if (deliveryIds.length === 1 && shownText !== undefined && shownText !== null && shownText === deliveries[0]?.text && (await this.settleShown(deliveryId, messageId))) return deliveryId;
    await this.deps.store.setDeliveryEditTarget(deliveryId, messageId);
    return null;
  }

  /** Records a delivery the stream showed as sent: claimed first, as every send is; false when another sender has it. */
  private async settleShown(deliveryId: number, messageId: string): Promise<boolean> {
    const claimed = await this.deps.store.claimDelivery(deliveryId);
    if (!claimed) return false;
    await this.deps.store.markDeliverySent(deliveryId, messageId);
    return true;
  }

  private async stillPending(ids: number[]): Promise<boolean> {
    const rows = await Promise.all(ids.map((id) => this.deps.store.getInboxRow(id)));
    return rows.some((r) => r?.status === "pending");
  }

  /**
   * `claimed`: the reply's ledger row is inserted already claimed, since this process sends it as
   * soon as the flush commits (dispatchDeliveries). Not while a stream has posted: the streamed
   * message's edit target is set on the row after the flush, which only an unclaimed row takes.
   */
  private endRecords(
    answered: InboxRow[],
    replyRow: InboxRow,
    sessionId: string,
    status: "done" | "failed" | "interrupted",
    finalResponse: string,
    { claimed, usage, model }: { claimed: boolean; usage: TurnUsage; model: string },
  ): TurnEndRecords {
    const inbound = inboundOf(replyRow);
    const sends = this.deps.sendingPlatforms().has(replyRow.platform) && inbound.replyTarget && finalResponse;
    return {
      completeInbox: { ids: answered.map((r) => r.id), reply: finalResponse, status },
      deliveries: sends ? [{ platform: replyRow.platform, sessionId, target: inbound.replyTarget ?? {}, text: finalResponse, inboxId: replyRow.id, claimed }] : [],
      // A turn that called no model (a failure before the first call) used nothing worth a row.
      ...(usage.modelCalls > 0
        ? { usage: { platform: replyRow.platform, sessionId, userId: inbound.userId, inboxId: replyRow.id, model, ...usage } }
        : {}),
    };
  }

  /** A client-addressed or seeded session gets its row (and seed history) on its first turn. */
  private async ensureSessionRow(sessionId: string, row: InboxRow): Promise<void> {
    const { store } = this.deps;
    if (await store.getSession(sessionId)) return;
    await store.createSession(sessionId, sessionInputOf(row));
  }

  private track(conversationId: string, turn: RunningTurn): void {
    let set = this.running.get(conversationId);
    if (!set) this.running.set(conversationId, (set = new Set()));
    set.add(turn);
  }

  private untrack(conversationId: string, turn: RunningTurn): void {
    const set = this.running.get(conversationId);
    set?.delete(turn);
    if (set && set.size === 0) this.running.delete(conversationId);
  }
}

/**
 * At the turn's end records: no stream, or one closed now because it posted nothing (a reply done
 * before its first post was due). Its final text then goes out as one new message, so the ledger
 * row can be inserted claimed and sent without a claim's write of its own.
 */
function streamEnded(state: TurnState): boolean {
  if (state.stream === null) return true;
  if (!state.stream.closeIfUnposted()) return false;
  state.stream = null;
  return true;
}

/** The next turn of a wake-up: the row it is for, and the row itself when at hand. */
interface NextTurn {
  id: number;
  platform: string;
  row?: InboxRow;
}

function nextTurnOf(row: InboxRow | null): NextTurn | null {
  return row ? { id: row.id, platform: row.platform, row } : null;
}

/** A pending row whose message is known without a download, in a mode that takes the head as it is. */
function expectsPlainInput(row: InboxRow, mode: BusyMode): boolean {
  return row.status === "pending" && mode !== "interrupt" && !hasMedia(row) && !row.payload.command;
}

/** The session row a row's first turn creates when its session has none. */
function sessionInputOf(row: InboxRow): CreateSessionInput {
  const inbound = inboundOf(row);
  return { source: inbound.platform, sessionKey: inbound.sessionKey, chatId: inbound.chatId, threadId: inbound.threadId, userId: inbound.userId };
}

function userMessageOf(row: InboxRow): AdmittedUserInput {
  const inbound = inboundOf(row);
  return {
    text: inbound.text,
    apiText: inbound.apiText ?? null,
    timestamp: row.received_at,
    platformMessageId: inbound.transcriptMessageId ?? row.platform_message_id,
    displayKind: inbound.displayKind ?? null,
    displayMetadata: inbound.displayMetadata ?? { platform: row.platform, user_id: inbound.userId },
  };
}

/**
 * The flush's ledger rows as the sender takes them: a row inserted claimed goes as the row itself
 * (its insert, with the id the flush returned, in the same order), so it is sent without a
 * claim's write; any other by id, to be claimed first.
 */
function deliveriesToSend(ids: readonly number[], inserts: readonly DeliveryInsert[]): DeliveryToSend[] {
  // Never expected (one end-records flush per turn): by id, a claimed row is then refused until its
  // claim is old and resent by a job as a possible duplicate; none is lost.
  if (inserts.length !== ids.length) return [...ids];
  return ids.map((id, index) => {
    const insert = inserts[index];
    if (!insert.claimed) return id;
    return { id, platform: insert.platform, session_id: insert.sessionId, inbox_id: insert.inboxId ?? null, target: insert.target, text: insert.text, possible_duplicate: false };
  });
}
