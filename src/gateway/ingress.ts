// Durable ingress: record the inbound message in the inbox, then enqueue a wake-up for its
// session, and only then acknowledge. Redis down -> the row is still recorded; the reconciler
// enqueues it later. Every received message is recorded or explicitly rejected with a reason.
// Messages accepted together are recorded together (group commit: one transaction, one
// pipelined enqueue); each is still acknowledged only after its own row is durable.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { InboxInsert, InboxRow, KeyedInboxInsert, SessionForKey, SessionStore } from "../state/types.js";
import { parseCommand, HELP_TEXT, type CommandName } from "./commands.js";
import type { CoreConfig } from "./config.js";
import { GroupCommit, type Settled, type Slot } from "./group-commit.js";
import type { EventPublisher, EventSubscriber, InterruptPublisher } from "../bus/types.js";
import type { GatewayMetrics } from "./metrics.js";
import type { WakeUpSink } from "./local-wake-ups.js";
import { turnJobData, turnJobId, untilReady, withTimeout, type GatewayQueues, type TurnJobData } from "./queues.js";
import { without } from "../shared/bench-without.js";
import { payloadOf } from "./inbox-payload.js";
import { ANNOUNCER_FIELD, announceQueued, queuedNoticeOf } from "./queued-notices.js";
import { checkImage, checkMessageImages, MediaError, type MediaSettings } from "./media.js";
import type { AccessPolicy, Refusal } from "./access.js";
import type { UsageLimits } from "./usage-limits.js";
import type { BotLoops } from "./bot-loops.js";
import { SessionNotAddressableError } from "./session-not-addressable.js";
import type { AcceptResult, DeliveryReceipt, GatewayIngress, InboundImage, InboundMessage, TurnOutcome } from "./types.js";

export interface IngressDeps {
  config: CoreConfig;
  store: SessionStore;
  queues: GatewayQueues;
  events: EventPublisher & EventSubscriber;
  interrupts: InterruptPublisher;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Platforms whose replies go out through the deliveries queue (others read results themselves). */
  sendingPlatforms: () => Set<string>;
  /** Enqueue delivery jobs for a session's unsent deliveries. */
  dispatchDeliveries: (sessionId: string) => Promise<void>;
  /** Who may talk to the bot on the chat platforms (access.ts); absent: everyone. */
  access?: AccessPolicy;
  /** Messages a minute and tokens a day per chat user and conversation (usage-limits.ts); absent: none. */
  limits?: UsageLimits;
  /** Runs of other bots' messages per conversation (bot-loops.ts); absent: no bot is let in. */
  botLoops?: BotLoops;
}

const ENQUEUE_TIMEOUT_MS = 1500;

/** A recorded inbound message, and (when new) whether its wake-up job was added. */
interface Recorded {
  inserted: boolean;
  row: InboxRow;
  enqueued: boolean;
}

export class Ingress implements GatewayIngress {
  /** Redis was up at least once: a later outage fails fast instead of waiting for a reconnect. */
  private redisWasReady = false;
  private readonly inbound = new GroupCommit<InboxInsert | KeyedInboxInsert, Recorded>((inserts) => this.recordAndEnqueue(inserts));
  /** This process's own workers, when it has them and takes wake-ups in memory (local-wake-ups.ts). */
  private wakeUps: WakeUpSink | null = null;
  /** Requests waiting for a row's outcome, by inbox id: answered from memory by settleOutcomes(). */
  private readonly outcomeWaiters = new Map<number, Set<(outcome: TurnOutcome) => void>>();

  constructor(private readonly deps: IngressDeps) {
    const connection = deps.queues.connection;
    if (connection.status === "ready") this.redisWasReady = true;
    else connection.once("ready", () => (this.redisWasReady = true));
  }

  /**
   * Hand new rows' wake-ups to this process's workers in memory rather than through BullMQ; the
   * queue stays the way when the sink does not take them (its thread is down, it is closing).
   */
  useWakeUps(sink: WakeUpSink | null): void {
    this.wakeUps = without("local-hand-off") ? null : sink;
  }

  async accept(message: InboundMessage): Promise<AcceptResult> {
    // The slot keeps a batch that is ready from leaving before this message's reads are done.
    const slot = this.inbound.reserve();
    try {
      return await this.acceptIn(slot, message);
    } finally {
      slot.release();
    }
  }

  private async acceptIn(slot: Slot<InboxInsert | KeyedInboxInsert, Recorded>, message: InboundMessage): Promise<AcceptResult> {
    const started = performance.now();
    const { metrics, logger } = this.deps;
    const problem = this.validate(message);
    if (problem) {
      metrics.inbound.inc({ platform: message.platform || "unknown", result: "rejected" });
      logger.warn({ platform: message.platform, platformMessageId: message.platformMessageId, reason: problem }, "inbound message rejected");
      return { status: "rejected", reason: problem };
    }
    // Who may talk first, then how much: a stranger's messages count towards no limit.
    const refusal = (await this.deps.access?.refusal(message)) ?? (await this.countedRefusal(message));
    if (refusal) return this.refuse(message, refusal);
    const command = parseCommand(message.text);
    if (command) return this.runCommand(command.name, message, await this.conversationIdFor(message));

    const { inserted, row, enqueued } = await slot.submit({
      ...(message.sessionId ? { sessionId: await this.conversationIdFor(message) } : { sessionForKey: this.sessionForKeyOf(message) }),
      platform: message.platform,
      platformMessageId: message.platformMessageId,
      payload: payloadOf(message, this.announcerStamp()),
      receivedAt: message.receivedAt / 1000,
      attachments: message.images?.map((image) => ({ content_type: image.contentType, name: image.name ?? null, data: image.data })),
    });
    if (!inserted) {
      metrics.inbound.inc({ platform: message.platform, result: "duplicate" });
      return { status: "duplicate", inboxId: row.id, sessionId: row.session_id };
    }
    metrics.inbound.inc({ platform: message.platform, result: "accepted" });
    metrics.acceptSeconds.observe({ platform: message.platform }, (performance.now() - started) / 1000);
    return { status: "accepted", inboxId: row.id, sessionId: row.session_id, enqueued };
  }

  /**
   * One batch of accepted messages: their rows in one transaction, then their wake-ups (in memory,
   * or their jobs in one round trip), each new row's `message.queued` notice published before its
   * wake-up can start a turn (queued-notices.ts). A batch that fails to record is recorded row by
   * row, so one bad row fails alone.
   */
  private async recordAndEnqueue(inserts: Array<InboxInsert | KeyedInboxInsert>): Promise<Array<Settled<Recorded>>> {
    const { store } = this.deps;
    let recorded: Array<Settled<{ inserted: boolean; row: InboxRow }>>;
    try {
      recorded = (await store.recordInboundBatch(inserts)).map((value) => ({ ok: true, value }));
    } catch (batchError) {
      if (inserts.length === 1) return [{ ok: false, error: asError(batchError) }];
      recorded = [];
      // In call order, so ids still follow it.
      for (const insert of inserts) {
        recorded.push(await store.recordInboundBatch([insert]).then(([value]) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error: asError(error) })));
      }
    }
    const fresh = recorded.flatMap((result) => (result.ok && result.value.inserted ? [result.value.row] : []));
    const enqueued = fresh.length > 0 && (await this.wakeUp(fresh));
    return recorded.map((result) => (result.ok ? { ok: true, value: { ...result.value, enqueued: result.value.inserted && enqueued } } : result));
  }

  /** The payload field naming the announcer of a row this process's own workers will wake up (queued-notices.ts). */
  private announcerStamp(): Record<string, string> {
    const announcer = this.wakeUps?.announcer;
    return announcer ? { [ANNOUNCER_FIELD]: announcer } : {};
  }

  /**
   * Hand new rows' wake-ups to this process's workers, which announce them and take those they
   * have room for (local-wake-ups.ts); the rest (all, without such workers) get BullMQ jobs once their notices
   * are out (a worker elsewhere may start at once).
   */
  private async wakeUp(rows: readonly InboxRow[]): Promise<boolean> {
    const notices = rows.map(queuedNoticeOf);
    const wakeUps = rows.map((row) => ({ conversationId: row.session_id, inboxId: row.id, platform: row.platform, row }));
    const spilled = this.wakeUps?.offer(wakeUps, notices) ?? null;
    if (spilled && spilled.rest.length === 0) return true;
    const rest = spilled ? rowsOf(rows, spilled.rest) : rows;
    const announced = spilled ? spilled.announced : announceQueued(this.deps.events, notices);
    // With Redis unreachable the jobs fail fast and the ack does not wait for the notices either.
    if (this.deps.queues.connection.status === "ready") await withTimeout(announced, ENQUEUE_TIMEOUT_MS, "message.queued").catch(() => undefined);
    return this.enqueueRows(rest);
  }

  /** Add the wake-up job; false (row stays pending for the reconciler) when Redis is unavailable. */
  async enqueue(conversationId: string, inboxId: number): Promise<boolean> {
    return this.enqueueRows([{ session_id: conversationId, id: inboxId }]);
  }

  /** Add the rows' wake-up jobs in one round trip; false (rows stay pending for the reconciler) when Redis is unavailable. */
  private async enqueueRows(rows: ReadonlyArray<Pick<InboxRow, "id" | "session_id"> & { platform?: string }>): Promise<boolean> {
    try {
      // At start-up the connection may still be connecting: give it a moment. In an outage, fail fast.
      if (!this.redisWasReady) await untilReady(this.deps.queues.connection, ENQUEUE_TIMEOUT_MS);
      const { turns } = this.deps.queues;
      const added: Promise<unknown> =
        rows.length === 1
          ? turns.add("turn", jobDataOf(rows[0]), { jobId: turnJobId(rows[0].id) })
          : turns.addBulk(rows.map((row) => ({ name: "turn", data: jobDataOf(row), opts: { jobId: turnJobId(row.id) } })));
      await withTimeout(added, ENQUEUE_TIMEOUT_MS, "enqueue");
      // No write to mark them: the hot path keeps to one SQLite write per batch. The reconciler
      // stamps enqueued_at on the rows it had to re-enqueue.
      return true;
    } catch (err) {
      this.deps.logger.warn({ inboxIds: rows.map((row) => row.id), err: (err as Error).message }, "enqueue failed; the inbox rows stay pending for the reconciler");
      return false;
    }
  }

  /** Add wake-up jobs for many rows in one round trip (job ids dedupe); throws when Redis is down. */
  async enqueueMany(rows: ReadonlyArray<{ conversationId: string; inboxId: number; platform?: string }>): Promise<void> {
    if (rows.length === 0) return;
    const jobs = rows.map(({ conversationId, inboxId, platform }) => ({ name: "turn", data: turnJobData(conversationId, inboxId, platform), opts: { jobId: turnJobId(inboxId) } }));
    await withTimeout(this.deps.queues.turns.addBulk(jobs), ENQUEUE_TIMEOUT_MS * 4, "enqueue batch");
  }

  /**
   * Outcomes of turns this process's workers ran, handed over in memory once their leases were
   * released: the requests waiting on those rows answer without reading them back.
   */
  settleOutcomes(outcomes: readonly TurnOutcome[]): void {
    for (const outcome of outcomes) {
      const waiters = this.outcomeWaiters.get(outcome.inboxId);
      if (waiters) for (const settle of [...waiters]) settle(outcome);
    }
  }

  /**
   * Resolves once the row is settled. A turn of this process hands its outcome over in memory
   * (settleOutcomes). Any turn records its outcome before it releases the session's lease, and
   * every release is announced in this process and (through the lease notifier) from every other
   * one, so the waiter reads the row at each release of its conversation: no per-request
   * subscription. A slow poll covers a lost notice (Redis outage). `recordedNow`: the caller's
   * accept() has just recorded the row, in this pass of the event loop, so no turn can have
   * settled it yet: the first read is skipped.
   */
  async waitForOutcome(inboxId: number, timeoutMs: number, knownConversationId?: string, options: { recordedNow?: boolean } = {}): Promise<TurnOutcome> {
    const { store } = this.deps;
    let conversationId = knownConversationId;
    if (conversationId === undefined) {
      const first = await store.getInboxRow(inboxId);
      if (!first) throw new Error(`unknown inbox row ${inboxId}`);
      if (first.status !== "pending") {
        this.deps.metrics.outcomeWaits.inc({ source: "row" });
        return outcomeOf(first);
      }
      conversationId = first.session_id;
    }
    const listenOn = conversationId;
    return new Promise<TurnOutcome>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: TurnOutcome | null, error?: Error): void => {
        if (settled) return;
        settled = true;
        clearInterval(poll);
        clearTimeout(timer);
        stopListening();
        stopWaiting();
        if (outcome) resolve(outcome);
        else reject(error ?? new Error("no outcome"));
      };
      const settleFromRow = (row: InboxRow): void => {
        if (!settled) this.deps.metrics.outcomeWaits.inc({ source: "row" });
        finish(outcomeOf(row));
      };
      const check = async (): Promise<void> => {
        let row: InboxRow | null;
        try {
          row = await store.getInboxRow(inboxId);
        } catch {
          return; // unreadable now: the next release or the poll reads again
        }
        if (row === null) {
          // Only a caller-named conversation skips the first read that would have said so.
          if (knownConversationId !== undefined) finish(null, new Error(`unknown inbox row ${inboxId}`));
          return;
        }
        if (row.status !== "pending") settleFromRow(row);
      };
      const poll = setInterval(() => void check(), 1000);
      const timer = setTimeout(() => finish(null, new OutcomeTimeoutError(inboxId, timeoutMs)), timeoutMs);
      // The inbox row's session_id is the conversation id: the lease's key.
      // At the end of this pass: a turn of this process hands its outcome over just after its
      // release, which then needs no read.
      const stopListening = store.onSessionTurnLeaseReleased(listenOn, () => setImmediate(() => void (settled || check())));
      const stopWaiting = this.waitInMemory(inboxId, (outcome) => {
        if (!settled) this.deps.metrics.outcomeWaits.inc({ source: "memory" });
        finish(outcome);
      });
      // A release before the listener (or between the first read and it): read now that it listens.
      if (!options.recordedNow) void check();
    });
  }

  private waitInMemory(inboxId: number, settle: (outcome: TurnOutcome) => void): () => void {
    let waiters = this.outcomeWaiters.get(inboxId);
    if (!waiters) this.outcomeWaiters.set(inboxId, (waiters = new Set()));
    waiters.add(settle);
    return () => {
      waiters.delete(settle);
      if (waiters.size === 0) this.outcomeWaiters.delete(inboxId);
    };
  }

  async recordRejected(message: InboundMessage, reason: string): Promise<AcceptResult> {
    const { store, metrics, logger } = this.deps;
    metrics.inbound.inc({ platform: message.platform || "unknown", result: "rejected" });
    logger.info({ platform: message.platform, platformMessageId: message.platformMessageId, reason }, "inbound message rejected");
    // Without its id the message cannot be keyed (and so not recorded); the reason is still given.
    if (!message.platform || !message.platformMessageId) return { status: "rejected", reason };
    const conversationId = await this.conversationIdFor(message);
    await store.recordRejected(
      { platform: message.platform, platformMessageId: message.platformMessageId, sessionId: conversationId, payload: payloadOf(message), receivedAt: message.receivedAt / 1000 },
      reason,
    );
    return { status: "rejected", reason };
  }

  /**
   * Past a bot run's or a usage limit? Counted in Redis; with Redis unreachable the message goes on
   * (a count never loses a message).
   */
  private async countedRefusal(message: InboundMessage): Promise<Refusal | null> {
    const { botLoops, limits } = this.deps;
    if (!botLoops && !limits) return null;
    try {
      const check = async (): Promise<Refusal | null> => (await botLoops?.refusal(message)) ?? (await limits?.refusal(message)) ?? null;
      return await withTimeout(check(), ENQUEUE_TIMEOUT_MS, "usage counts");
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, "bot runs and usage limits not checked (Redis unavailable); the message goes on");
      return null;
    }
  }

  /** A message the access policy or a usage limit refused: recorded as rejected; a new pairing code is sent to the sender. */
  private async refuse(message: InboundMessage, refusal: Refusal): Promise<AcceptResult> {
    const { store, metrics, logger } = this.deps;
    metrics.inbound.inc({ platform: message.platform, result: "rejected" });
    logger.info({ platform: message.platform, platformMessageId: message.platformMessageId, reason: refusal.reason }, "inbound message refused before its turn");
    const conversationId = await this.conversationIdFor(message);
    const row = await store.recordRejected(
      { platform: message.platform, platformMessageId: message.platformMessageId, sessionId: conversationId, payload: payloadOf(message), receivedAt: message.receivedAt / 1000 },
      refusal.reason,
    );
    if (refusal.notice && message.replyTarget && this.deps.sendingPlatforms().has(message.platform)) {
      await store.createDeliveries([{ platform: message.platform, sessionId: conversationId, target: message.replyTarget, text: refusal.notice, inboxId: row.id }]);
      await this.deps.dispatchDeliveries(conversationId).catch(() => undefined);
    }
    return { status: "rejected", reason: refusal.reason };
  }

  async recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<boolean> {
    const row = await this.deps.store.recordDeliveryReceipt(platform, platformMessageId, receipt);
    if (!row) return false;
    void this.deps.events
      .publish(row.session_id, "reply.status", {
        delivery_id: row.id,
        inbox_id: row.inbox_id,
        platform,
        platform_message_id: platformMessageId,
        status: receipt.status,
        shown_status: row.display_metadata?.receipt ?? receipt.status,
        ...(receipt.errors?.length ? { errors: receipt.errors } : {}),
      })
      .catch(() => undefined);
    return true;
  }

  async interrupt(sessionId: string, options: { text?: string; hard?: boolean }): Promise<void> {
    const conversationId = await this.deps.store.conversationIdOf(sessionId);
    await this.deps.interrupts.publish({ sessionId: conversationId, text: options.text, hard: options.hard ?? false });
  }

  private validate(message: InboundMessage): string | null {
    if (!message.platform) return "platform is missing";
    if (!message.platformMessageId) return "platform message id is missing";
    if (typeof message.text !== "string") return "text is missing";
    const media = (message.images?.length ?? 0) + (message.attachments?.length ?? 0);
    if (message.text.trim() === "" && media === 0) return "text is empty";
    if (message.text.length > this.deps.config.maxMessageChars) return `text is longer than ${this.deps.config.maxMessageChars} characters`;
    if (message.images?.length) return imagesProblem(message.images, this.deps.config.media);
    return null;
  }

  /**
   * The conversation id this message belongs to; creates the session for a new key. A session
   * addressed by id whose source is not among `sessionSources` throws SessionNotAddressableError.
   */
  private async conversationIdFor(message: InboundMessage): Promise<string> {
    const { store } = this.deps;
    if (message.sessionId) {
      if (message.seedHistory?.length) await this.seedSession(message);
      if (!message.sessionSources) return store.conversationIdOf(message.sessionId);
      const { conversationId, source } = await store.addressedSession(message.sessionId);
      if (source !== null && !message.sessionSources.includes(source)) throw new SessionNotAddressableError(message.sessionId, source);
      return conversationId;
    }
    const { key, newId, input } = this.sessionForKeyOf(message);
    const session = await store.ensureSessionForKey(key, newId, input);
    return store.conversationIdOf(session.id);
  }

  /** The session a platform message routes to by its key (a new one named newId when the key has none). */
  private sessionForKeyOf(message: InboundMessage): SessionForKey {
    const key = this.deps.config.sessionPerUser.includes(message.platform) && message.userId ? `${message.sessionKey}:${message.userId}` : message.sessionKey;
    return {
      key,
      newId: randomUUID(),
      input: { source: message.platform, sessionKey: key, chatId: message.chatId, threadId: message.threadId, userId: message.userId },
    };
  }

  /** A fresh session seeded from a request's prior messages; nobody else knows its id yet. */
  private async seedSession(message: InboundMessage): Promise<void> {
    const { store } = this.deps;
    const id = message.sessionId as string;
    if (await store.getSession(id)) return;
    await store.createSession(id, { source: message.platform, sessionKey: message.sessionKey, chatId: message.chatId, threadId: message.threadId, userId: message.userId });
    const now = message.receivedAt / 1000;
    await store.appendMessagesBatch(
      id,
      (message.seedHistory ?? []).map((m) => ({ role: m.role, content: m.content, timestamp: now, display_kind: "seed" })),
    );
  }

  private async runCommand(name: CommandName, message: InboundMessage, conversationId: string): Promise<AcceptResult> {
    const { store, metrics } = this.deps;
    const { inserted, row } = await store.recordInbound({
      platform: message.platform,
      platformMessageId: message.platformMessageId,
      sessionId: conversationId,
      payload: payloadOf(message, { command: name }),
      receivedAt: message.receivedAt / 1000,
    });
    if (!inserted) {
      metrics.inbound.inc({ platform: message.platform, result: "duplicate" });
      return { status: "duplicate", inboxId: row.id, sessionId: row.session_id };
    }
    metrics.inbound.inc({ platform: message.platform, result: "accepted" });
    const reply = await this.commandReply(name, message, conversationId);
    await store.completeInbox([row.id], "done", reply, `command:${name}`);
    if (this.deps.sendingPlatforms().has(message.platform) && message.replyTarget) {
      await store.createDeliveries([{ platform: message.platform, sessionId: conversationId, target: message.replyTarget, text: reply, inboxId: row.id }]);
      await this.deps.dispatchDeliveries(conversationId).catch(() => undefined);
    }
    void this.deps.events.publish(conversationId, "command", { inbox_id: row.id, inbox_ids: [row.id], command: name, reply }).catch(() => undefined);
    return { status: "accepted", inboxId: row.id, sessionId: conversationId, enqueued: false };
  }

  private async commandReply(name: CommandName, message: InboundMessage, conversationId: string): Promise<string> {
    const { store } = this.deps;
    switch (name) {
      case "help":
        return HELP_TEXT;
      case "stop":
        await this.deps.interrupts.publish({ sessionId: conversationId, hard: true, text: "stopped by /stop" });
        return "Stopped.";
      case "new": {
        if (message.sessionId) return "This conversation is addressed by its id; start a new one by using a new session id.";
        const tip = await store.resolveTip(conversationId);
        await store.endSession(tip, "reset");
        return "Started a new conversation.";
      }
      case "status": {
        const tip = await store.resolveTip(conversationId);
        // Commands (this one included) are answered at once; only messages wait in the queue.
        const pending = (await store.pendingInbox(conversationId, 1000)).filter((r) => !r.payload.command);
        const lease = await store.getSessionTurnLease(conversationId);
        const state = lease ? "a turn is running" : "idle";
        return `Session ${tip}: ${state}; ${pending.length} message(s) queued.`;
      }
    }
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** Images in hand are checked here too, whoever built the message: type by their bytes, and the caps. */
function imagesProblem(images: InboundImage[], settings: MediaSettings): string | null {
  try {
    for (const image of images) {
      const checked = checkImage(image.data, settings, image.name ?? null);
      if (checked.content_type !== image.contentType) return `image ${image.name ?? ""} is ${checked.content_type}, not ${image.contentType}`.replace("  ", " ");
    }
    checkMessageImages(images, settings);
    return null;
  } catch (err) {
    if (err instanceof MediaError) return err.message;
    throw err;
  }
}

export class OutcomeTimeoutError extends Error {
  constructor(readonly inboxId: number, timeoutMs: number) {
    super(`no reply for inbox row ${inboxId} within ${timeoutMs} ms; it is still queued and will be processed`);
    this.name = "OutcomeTimeoutError";
  }
}

function outcomeOf(row: { id: number; session_id: string; status: string; reply: string | null; received_at: number }): TurnOutcome {
  const status = row.status === "pending" ? "done" : (row.status as TurnOutcome["status"]);
  return { inboxId: row.id, sessionId: row.session_id, status, reply: row.reply, receivedAt: row.received_at };
}

/** A new row's wake-up job: its platform too, so the turn needs no read before it takes the lease. */
function jobDataOf(row: Pick<InboxRow, "id" | "session_id"> & { platform?: string }): TurnJobData {
  return turnJobData(row.session_id, row.id, row.platform);
}

/** The rows of the given wake-ups, in the wake-ups' order. */
function rowsOf(rows: readonly InboxRow[], wakeUps: ReadonlyArray<{ inboxId: number }>): InboxRow[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return wakeUps.flatMap((wakeUp) => byId.get(wakeUp.inboxId) ?? []);
}
