// SessionDB: the SQLite implementation of SessionStore. Each method is one short synchronous
// SQLite call wrapped in an asynchronous busy retry, so a lock held by another process delays
// callers without freezing the event loop. Writes also hold the process's write gate for the file
// (write-gate.ts), so this process's threads take turns instead of colliding. Lease/fence SQL lives in lease.ts.
import type { Database } from "better-sqlite3";
import { AttachmentSql } from "./attachments.js";
import { PairingSql } from "./pairings.js";
import { UsageSql } from "./usage.js";
import { isSqliteBusy, retryWhileBusy } from "./busy-retry.js";
import { toMessageRow, transcriptFromRows } from "./conversation.js";
import { DeliverySql } from "./deliveries.js";
import { SessionDBClosedError, UnknownSessionError } from "./errors.js";
import { thisHost } from "./holder.js";
import { InboxSql } from "./inbox.js";
import { waitForLease } from "./lease-admission.js";
import { StoreWakeups } from "./lease-wakeups.js";
import { LeaseSql } from "./lease.js";
import { MessageSql } from "./messages.js";
import { openDatabase } from "./open-database.js";
import type { OnTightened } from "./private-files.js";
import { SessionSql } from "./sessions.js";
import { positiveSeconds, STORE_DEFAULTS, type StoreOptions } from "./store-options.js";
import { DEFAULT_RESTART_AFTER_FRAMES, WalCheckpointer } from "./wal-checkpointer.js";
import { TranscriptRows } from "./transcript-rows.js";
import { TurnStartReads, turnStartReadOf, type TranscriptRowsRead, type TurnStartRows } from "./turn-start.js";
import { WriteBatches, type WriteOptions } from "./write-batches.js";
import { WriteGate } from "./write-gate.js";
import { without } from "../shared/bench-without.js";
import type {
  AppendBatchOptions,
  ConversationMessage,
  ConversationReadOptions,
  CreateSessionInput,
  DeliveryInsert,
  DeliveryReceipt,
  ClaimDeliveryOptions,
  DeliveryRow,
  FlushResult,
  InboxInsert,
  KeyedInboxInsert,
  InboxRow,
  InboxStatus,
  WakeUpView,
  LeaseAcquireOptions,
  MessageRow,
  PairingRow,
  UsageFilter,
  UsageTotals,
  SessionRow,
  SessionStore,
  SessionSummary,
  StaleLease,
  StoredAttachment,
  TurnStartRead,
} from "./types.js";

export interface SessionDBOptions extends StoreOptions {
  /** How long SQLite itself may block on a lock before the async retry takes over. Default 0:
   *  every wait happens in the async retry, so a locked file never stalls the event loop. */
  busyTimeoutMs?: number;
  /** How long a call keeps retrying a busy/locked database before failing. Default 30 s. */
  busyRetryDeadlineMs?: number;
  /**
   * Checkpoint the WAL from a worker thread every this many ms instead of inside commits (see
   * wal-checkpointer.ts). The gateway turns it on; off (0) by default. Ignored in memory.
   */
  backgroundCheckpointMs?: number;
  /** With background checkpoints: rewind the WAL once it holds more frames than this (default 32,768, 128 MB). */
  walRestartFrames?: number;
  /**
   * Another connection of this process checkpoints the file in the background (serve's workers
   * thread: the main thread's checkpointer). This one then keeps checkpoints out of its commits as
   * well, up to a WAL far longer than that checkpointer lets it grow: a bound should it stop.
   */
  checkpointedElsewhere?: boolean;
  /** The database or its -wal/-shm file had a mode wider than 0600 and was tightened. */
  onModeTightened?: OnTightened;
}

const SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/** A write that is a transaction of its own: in a batch it needs no savepoint around it. */
const ATOMIC: WriteOptions = { atomic: true };
/** A batch the caller gathered: atomic, and run at once (write-batches.ts). */
const GATHERED: WriteOptions = { atomic: true, now: true };
/** SQLite's default page size, which the store keeps: a WAL frame holds one page. */
const WAL_PAGE_BYTES = 4096;
/** A reset log is trimmed back to this many times the rewind point. */
const WAL_TRIM_FACTOR = 1.5;
/** Checkpointed elsewhere: this connection checkpoints only once the WAL is this many times the rewind bound. */
const ELSEWHERE_AUTOCHECKPOINT_FACTOR = 4;

const DEFAULTS = {
  ...STORE_DEFAULTS,
  busyTimeoutMs: 0,
  busyRetryDeadlineMs: 30_000,
};

export class SessionDB implements SessionStore {
  private readonly db: Database;
  private readonly fileKey: string;
  private readonly sessions: SessionSql;
  private readonly messages: MessageSql;
  private readonly leases: LeaseSql;
  private readonly inbox: InboxSql;
  private readonly deliveries: DeliverySql;
  private readonly attachments: AttachmentSql;
  private readonly pairings: PairingSql;
  private readonly usage: UsageSql;
  private readonly wakeups: StoreWakeups;
  private readonly pollIntervalMs: number;
  private readonly defaultTtlSeconds: number;
  private readonly defaultWaitSeconds: number;
  private readonly busyRetryDeadlineMs: number;
  private readonly clock: () => number;
  private readonly flushTransaction: (sessionId: string, messages: ConversationMessage[], options: AppendBatchOptions) => FlushResult;
  private readonly ensureForKeyTransaction: (sessionKey: string, newId: string, input: CreateSessionInput) => SessionRow;
  private readonly createDeliveriesTransaction: (inserts: DeliveryInsert[]) => number[];
  private readonly recordReceiptTransaction: (platform: string, platformMessageId: string, receipt: DeliveryReceipt) => DeliveryRow | null;
  private readonly recordWithAttachments: (insert: InboxInsert) => { inserted: boolean; row: InboxRow };
  private readonly recordBatchTransaction: (inserts: ReadonlyArray<InboxInsert | KeyedInboxInsert>) => Array<{ inserted: boolean; row: InboxRow }>;
  /** The turn's first reads, in the lease's own transaction (turn-start.ts). */
  private readonly turnStart: TurnStartReads;
  /** One read transaction: a snapshot for the three reads, one lock and one cache check instead of three. */
  private readonly wakeUpRead: (conversationId: string, inboxId: number | null) => WakeUpView;
  private readonly checkpointer: WalCheckpointer | null = null;
  private readonly gate: WriteGate;
  private readonly writes: WriteBatches;
  private readonly transcripts: TranscriptRows;
  private closed = false;

  constructor(path: string, options: SessionDBOptions = {}) {
    const opened = openDatabase(path, options.busyTimeoutMs ?? DEFAULTS.busyTimeoutMs, options.onModeTightened);
    this.db = opened.db;
    this.fileKey = opened.fileKey;
    // Without the gate (a benchmark's comparison) each thread has one of its own: they meet SQLITE_BUSY.
    this.gate = opened.inMemory || without("write-gate") ? WriteGate.private() : WriteGate.forFile(opened.fileKey);
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
    this.defaultTtlSeconds = options.defaultTtlSeconds ?? DEFAULTS.defaultTtlSeconds;
    this.defaultWaitSeconds = options.defaultWaitSeconds ?? DEFAULTS.defaultWaitSeconds;
    this.busyRetryDeadlineMs = options.busyRetryDeadlineMs ?? DEFAULTS.busyRetryDeadlineMs;
    this.clock = options.now ?? (() => Date.now() / 1000);
    this.transcripts = new TranscriptRows(options.transcriptCacheBytes);
    if (options.backgroundCheckpointMs && !opened.inMemory) {
      this.checkpointer = this.checkpointInBackground(path, options.backgroundCheckpointMs, options.walRestartFrames);
    } else if (options.checkpointedElsewhere && !opened.inMemory) {
      // SQLite's default (1,000 frames) sits below where the other thread rewinds the log, so
      // nearly every commit here would run a checkpoint of its own, holding the write lock the
      // other thread's writers wait for.
      this.db.pragma(`wal_autocheckpoint = ${ELSEWHERE_AUTOCHECKPOINT_FACTOR * (options.walRestartFrames ?? DEFAULT_RESTART_AFTER_FRAMES)}`);
    }

    this.writes = new WriteBatches(this.db, (step) => this.holdingGate(step), this.busyRetryDeadlineMs, this.gate);
    this.sessions = new SessionSql(this.db);
    this.messages = new MessageSql(this.db);
    this.leases = new LeaseSql(this.db, options.hostname ?? thisHost());
    this.inbox = new InboxSql(this.db);
    this.deliveries = new DeliverySql(this.db);
    this.attachments = new AttachmentSql(this.db);
    this.pairings = new PairingSql(this.db);
    this.usage = new UsageSql(this.db);

    // TranscriptStore
    const flush = this.db.transaction((sessionId: string, messages: ConversationMessage[], batch: AppendBatchOptions): FlushResult => {
      const now = this.clock();
      const holder = batch.turnLeaseHolder;
      if (holder !== undefined && holder !== null) this.leases.assertHeld(this.sessions.conversationIdOf(sessionId), holder, now);
      if (messages.length > 0 && !this.sessions.has(sessionId)) throw new UnknownSessionError(sessionId);
      const messageIds = this.messages.insertAll(sessionId, messages, now);
      messages.forEach((message, index) => {
        if (message.attachments?.length) this.attachments.storeForMessage(sessionId, messageIds[index], message.attachments, now);
      });
      const completion = batch.endRecords?.completeInbox;
      if (completion) this.inbox.completeRows(completion.ids, completion.status ?? "done", completion.reply, null, now);
      const deliveryIds = batch.endRecords?.deliveries ? this.deliveries.insertAll(batch.endRecords.deliveries, now) : [];
      if (batch.endRecords?.usage) this.usage.insert(batch.endRecords.usage, now);
      return { messageIds, deliveryIds };
    });
    this.flushTransaction = (sessionId, messages, batch) => flush.immediate(sessionId, messages, batch);
    const ensure = this.db.transaction((sessionKey: string, newId: string, input: CreateSessionInput) =>
      this.sessions.ensureForKey(sessionKey, newId, input, this.clock()),
    );
    this.ensureForKeyTransaction = (sessionKey, newId, input) => ensure.immediate(sessionKey, newId, input);
    // LeaseStore
    this.turnStart = new TurnStartReads(this.db, {
      sessions: this.sessions,
      messages: this.messages,
      inbox: this.inbox,
      leases: this.leases,
      transcripts: this.transcripts,
      clock: () => this.clock(),
      transcriptRowsOf: (sessionId, withImageBytes) => this.transcriptRowsOf(sessionId, withImageBytes),
    });
    // InboxStore
    const recordOne = (insert: InboxInsert, now: number): { inserted: boolean; row: InboxRow } => {
      const recorded = this.inbox.record(insert, now, null);
      if (recorded.inserted && insert.attachments?.length) this.attachments.insertForInbox(recorded.row.id, insert.attachments, now);
      return recorded;
    };
    const recordWithAttachments = this.db.transaction((insert: InboxInsert) => recordOne(insert, this.clock()));
    this.recordWithAttachments = (insert) => recordWithAttachments.immediate(insert);
    const recordBatch = this.db.transaction((inserts: ReadonlyArray<InboxInsert | KeyedInboxInsert>) => {
      const now = this.clock();
      return inserts.map((insert) => recordOne(this.withSessionId(insert, now), now));
    });
    this.recordBatchTransaction = (inserts) => recordBatch.immediate(inserts);
    const wakeUpRead = this.db.transaction((conversationId: string, inboxId: number | null): WakeUpView => ({
      row: inboxId === null ? null : this.inbox.get(inboxId),
      head: this.inbox.pendingForSession(conversationId, 1)[0] ?? null,
      liveHolder: this.leases.liveHolder(this.sessions.conversationIdOf(conversationId), this.clock()),
    }));
    this.wakeUpRead = (conversationId, inboxId) => wakeUpRead.deferred(conversationId, inboxId);
    // DeliveryStore
    const createDeliveries = this.db.transaction((inserts: DeliveryInsert[]) => this.deliveries.insertAll(inserts, this.clock()));
    this.createDeliveriesTransaction = (inserts) => createDeliveries.immediate(inserts);
    const recordReceipt = this.db.transaction((platform: string, platformMessageId: string, receipt: DeliveryReceipt) =>
      this.deliveries.recordReceipt(platform, platformMessageId, receipt, this.clock()),
    );
    this.recordReceiptTransaction = (platform, platformMessageId, receipt) => recordReceipt.immediate(platform, platformMessageId, receipt);

    this.wakeups = new StoreWakeups(this.fileKey, options.notifier ?? null);
  }

  // ---- plumbing ----

  private checkpointInBackground(path: string, intervalMs: number, restartAfterFrames: number | undefined): WalCheckpointer {
    this.db.pragma("wal_autocheckpoint = 0");
    // A WAL that grew under a burst shrinks back once it is reset; above the rewind point (with room
    // for what is written between a checkpoint that finds the log past it and the rewind), so a log
    // rewound under steady writes is reused in place, not trimmed and grown again.
    const trimAboveBytes = Math.round((restartAfterFrames ?? DEFAULT_RESTART_AFTER_FRAMES) * WAL_PAGE_BYTES * WAL_TRIM_FACTOR);
    this.db.pragma(`journal_size_limit = ${trimAboveBytes}`);
    return WalCheckpointer.start(path, {
      intervalMs,
      restartAfterFrames,
      gate: this.gate.shared,
      onFailure: () => {
        if (!this.closed) this.db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES}`);
      },
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new SessionDBClosedError();
  }

  private run<T>(work: () => T): Promise<T> {
    return retryWhileBusy(() => {
      this.assertOpen();
      return work();
    }, this.busyRetryDeadlineMs);
  }

  /**
   * A call that writes: queued with the other writes of this pass of the event loop, which commit
   * together (write-batches.ts), holding the write gate, waited for without blocking the event loop.
   */
  private write<T>(work: () => T, options?: WriteOptions): Promise<T> {
    return this.writes.write(work, options);
  }

  private holdingGate<T>(step: () => T): Promise<T> {
    return this.gate.holdAsync(() => {
      this.assertOpen();
      return this.transcripts.withinWrite(step);
    });
  }


  // ---- TranscriptStore ----

  async createSession(id: string, input: CreateSessionInput): Promise<SessionRow> {
    return this.write(() => this.sessions.create(id, input, this.clock()));
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return this.run(() => this.sessions.get(id));
  }

  async endSession(id: string, reason: string): Promise<void> {
    return this.write(() => this.sessions.endSession(id, reason, this.clock()));
  }

  async sessionKeysWithPrefix(prefix: string, limit = 100_000): Promise<string[]> {
    return this.run(() => this.sessions.keysWithPrefix(prefix, limit));
  }

  /** Newest activity first; last_activity is the newest message's timestamp (null without messages). */
  async listSessions(options: { limit?: number } = {}): Promise<SessionSummary[]> {
    return this.run(() => this.sessions.listRecent(options.limit ?? 100));
  }

  async ensureSessionForKey(sessionKey: string, newId: string, input: CreateSessionInput): Promise<SessionRow> {
    // The common case (the key has a live session) is a read: no write lock per inbound message.
    return this.run(() => this.sessions.liveForKey(sessionKey) ?? this.gate.hold(() => this.ensureForKeyTransaction(sessionKey, newId, input)));
  }

  async resolveTip(sessionId: string): Promise<string> {
    return this.run(() => this.sessions.tipOf(sessionId));
  }

  async conversationIdOf(sessionId: string): Promise<string> {
    return this.run(() => this.sessions.conversationIdOf(sessionId));
  }

  async addressedSession(sessionId: string): Promise<{ conversationId: string; source: string | null }> {
    return this.run(() => ({ conversationId: this.sessions.conversationIdOf(sessionId), source: this.sessions.sourceOf(sessionId) }));
  }

  async appendMessage(sessionId: string, message: ConversationMessage): Promise<number> {
    const { messageIds } = await this.flushTurn(sessionId, [message]);
    return messageIds[0];
  }

  async appendMessagesBatch(sessionId: string, messages: ConversationMessage[], options: AppendBatchOptions = {}): Promise<number[]> {
    return (await this.flushTurn(sessionId, messages, options)).messageIds;
  }

  /** The fenced flush: lease check, inserts, inbox completion and deliveries in one transaction. */
  async flushTurn(sessionId: string, messages: ConversationMessage[], options: AppendBatchOptions = {}): Promise<FlushResult> {
    return this.write(() => this.flushTransaction(sessionId, messages, options), ATOMIC);
  }

  async getMessages(sessionId: string): Promise<MessageRow[]> {
    return this.run(() => {
      const attachments = this.attachments.bySessionMessage(sessionId, false);
      return this.messages.rows(sessionId).map((tuple) => {
        const row = toMessageRow(sessionId, tuple);
        const held = attachments.get(row.id);
        if (held) row.attachments = held;
        return row;
      });
    });
  }

  /** The model-ready transcript; `repairAlternation` applies repairToolPairing (see conversation.ts). */
  async getMessagesAsConversation(sessionId: string, options: ConversationReadOptions = {}): Promise<ConversationMessage[]> {
    return this.run(() => this.conversationOf(sessionId, options));
  }

  private conversationOf(sessionId: string, options: ConversationReadOptions): ConversationMessage[] {
    const { rows, attachments } = this.transcriptRowsOf(sessionId, true);
    return transcriptFromRows(rows, attachments, options);
  }

  private transcriptRowsOf(sessionId: string, withImageBytes: boolean): TranscriptRowsRead {
    const attachments = this.attachments.bySessionMessage(sessionId, withImageBytes);
    return { rows: this.transcripts.read(sessionId, (afterId) => this.messages.rowsAfter(sessionId, afterId)), attachments };
  }

  async hasPlatformMessageId(sessionId: string, platformMessageId: string): Promise<boolean> {
    return this.run(() => this.messages.hasPlatformMessageId(sessionId, platformMessageId));
  }

  // ---- LeaseStore ----

  async tryAcquireSessionTurnLease(sessionId: string, holder: string, options: { ttlSeconds?: number } = {}): Promise<boolean> {
    const ttl = positiveSeconds(options.ttlSeconds ?? this.defaultTtlSeconds, "ttlSeconds");
    return this.write(() => this.leases.tryAcquire(this.sessions.conversationIdOf(sessionId), holder, ttl, this.clock()).acquired);
  }

  async acquireSessionTurnLease(sessionId: string, holder: string, options: LeaseAcquireOptions = {}): Promise<boolean> {
    const ttl = positiveSeconds(options.ttlSeconds ?? this.defaultTtlSeconds, "ttlSeconds");
    const reading = options.readUnderLease;
    // A transcript this store does not hold yet is read before the lease's transaction, outside
    // the write lock, which then reads only the rows added since: a long conversation's first
    // read no longer holds the lock every other writer (the HTTP thread's acks) waits for.
    if (reading && this.turnStart.worthWarming(reading.sessionId)) await this.run(() => this.turnStart.warm(reading.sessionId));
    let read: TurnStartRead | null = null;
    const acquired = await waitForLease(
      {
        resolveConversationId: () => this.sessions.conversationIdOf(sessionId),
        // Batched with this pass's other writes; a busy database is reported to the wait loop.
        attempt: async (conversationId) => {
          if (!reading) return this.write(() => this.leases.tryAcquire(conversationId, holder, ttl, this.clock()), { busy: "report", atomic: true });
          const step = await this.write(() => this.turnStart.acquireAndRead(conversationId, holder, ttl, reading), { busy: "report", atomic: true });
          // The rows became messages after the commit: that work holds no lock.
          if (step.read) read = turnStartReadOf(await this.withImageBytes(step.read));
          return step.attempt;
        },
        isContended: isSqliteBusy,
        arm: (conversationId) => this.wakeups.arm(conversationId),
        pollIntervalMs: this.pollIntervalMs,
        assertOpen: () => this.assertOpen(),
      },
      options,
      options.waitSeconds ?? this.defaultWaitSeconds,
    );
    if (acquired && read) reading?.onRead(read);
    return acquired;
  }

  /**
   * The bytes of the images the lease's transaction listed, read outside the write lock. They
   * cannot have changed: a message's images are stored with it, and the lease now held keeps
   * every other writer off this conversation's messages.
   */
  private async withImageBytes(read: TurnStartRows): Promise<TurnStartRows> {
    const transcript = read.transcript;
    if (!transcript || transcript.attachments.size === 0) return read;
    const attachments = await this.run(() => this.attachments.bySessionMessage(read.sessionId, true));
    return { ...read, transcript: { ...transcript, attachments } };
  }

  async refreshSessionTurnLease(sessionId: string, holder: string, options: { ttlSeconds?: number } = {}): Promise<boolean> {
    const ttl = options.ttlSeconds === undefined ? undefined : positiveSeconds(options.ttlSeconds, "ttlSeconds");
    return this.write(() => this.leases.refresh(this.sessions.conversationIdOf(sessionId), holder, ttl, this.clock()));
  }

  async releaseSessionTurnLease(sessionId: string, holder: string): Promise<void> {
    await this.release(sessionId, holder, false);
  }

  async releaseSessionTurnLeaseAndReadHead(sessionId: string, holder: string): Promise<InboxRow | null> {
    return this.release(sessionId, holder, true);
  }

  /** The release (announced when it freed the lease) and, when asked, the pending head in its transaction. */
  private async release(sessionId: string, holder: string, readHead: boolean): Promise<InboxRow | null> {
    const { conversationId, released, head } = await this.write(() => {
      const conversationId = this.sessions.conversationIdOf(sessionId);
      const released = this.leases.release(conversationId, holder);
      return { conversationId, released, head: readHead ? (this.inbox.pendingForSession(conversationId, 1)[0] ?? null) : null };
    });
    if (released) this.wakeups.announceRelease(conversationId);
    return head;
  }

  async liveSessionTurnLeaseHolder(sessionId: string): Promise<string | null> {
    return this.run(() => this.leases.liveHolder(this.sessions.conversationIdOf(sessionId), this.clock()));
  }

  onSessionTurnLeaseReleased(conversationId: string, listener: () => void): () => void {
    return this.wakeups.listen(conversationId, listener);
  }

  async staleSessionTurnLeases(): Promise<StaleLease[]> {
    return this.run(() => this.leases.listStale(this.clock()));
  }

  async sessionTurnLeasesOfThisProcess(): Promise<Array<{ conversationId: string; holder: string }>> {
    return this.run(() => this.leases.listHeldByThisProcess());
  }

  async reapSessionTurnLease(conversationId: string, holder: string): Promise<boolean> {
    const reaped = await this.write(() => this.leases.reap(conversationId, holder, this.clock()));
    if (reaped) this.wakeups.announceRelease(conversationId);
    return reaped;
  }

  async getSessionTurnLease(sessionId: string): Promise<{ holder: string; acquired_at: number; expires_at: number } | null> {
    return this.run(() => this.leases.get(this.sessions.conversationIdOf(sessionId)));
  }

  // ---- InboxStore ----

  async recordInbound(insert: InboxInsert): Promise<{ inserted: boolean; row: InboxRow }> {
    // With attachments, the row and its images are one transaction: a turn never sees one without the other.
    if (insert.attachments?.length) return this.write(() => this.recordWithAttachments(insert), ATOMIC);
    return this.write(() => this.inbox.record(insert, this.clock(), null));
  }

  /** Group commit: every row (with its images) in one transaction, one commit. */
  async recordInboundBatch(inserts: ReadonlyArray<InboxInsert | KeyedInboxInsert>): Promise<Array<{ inserted: boolean; row: InboxRow }>> {
    if (inserts.length === 0) return [];
    return this.write(() => this.recordBatchTransaction(inserts), GATHERED);
  }

  /** A keyed insert's session, found or created inside the caller's transaction: its conversation id. */
  private withSessionId(insert: InboxInsert | KeyedInboxInsert, now: number): InboxInsert {
    if (!("sessionForKey" in insert)) return insert;
    const { sessionForKey, ...rest } = insert;
    const session = this.sessions.ensureForKey(sessionForKey.key, sessionForKey.newId, sessionForKey.input, now);
    return { ...rest, sessionId: this.sessions.conversationIdOf(session.id) };
  }

  /** A duplicate of a message already recorded returns the existing row unchanged. */
  async recordRejected(insert: InboxInsert, reason: string): Promise<InboxRow> {
    return this.write(() => this.inbox.record(insert, this.clock(), reason).row);
  }

  async getInboxRow(id: number): Promise<InboxRow | null> {
    return this.run(() => this.inbox.get(id));
  }

  async findInboxRow(platform: string, platformMessageId: string): Promise<InboxRow | null> {
    return this.run(() => this.inbox.find(platform, platformMessageId));
  }

  async markInboxEnqueued(ids: number[]): Promise<void> {
    return this.write(() => this.inbox.markAsEnqueued(ids, this.clock()));
  }

  async pendingInbox(sessionId: string, limit = 100): Promise<InboxRow[]> {
    return this.run(() => this.inbox.pendingForSession(sessionId, limit));
  }

  async wakeUpView(conversationId: string, inboxId: number | null): Promise<WakeUpView> {
    return this.run(() => this.wakeUpRead(conversationId, inboxId));
  }

  async listPendingInbox(limit = 1000): Promise<InboxRow[]> {
    return this.run(() => this.inbox.allPending(limit));
  }

  async unclaimedPendingHeads(olderThanSeconds: number, limit: number): Promise<Array<{ conversationId: string; inboxId: number }>> {
    return this.run(() => this.inbox.unclaimedHeads(this.clock() - olderThanSeconds, limit));
  }

  /** Only pending rows change: completing a settled row again is a no-op. */
  async completeInbox(ids: number[], status: Exclude<InboxStatus, "pending">, reply: string | null, reason: string | null = null): Promise<void> {
    return this.write(() => this.inbox.completeRows(ids, status, reply, reason, this.clock()));
  }

  async inboxCounts(): Promise<Record<InboxStatus, number>> {
    return this.run(() => this.inbox.counts());
  }

  // ---- DeliveryStore ----

  async createDeliveries(inserts: DeliveryInsert[]): Promise<number[]> {
    return this.write(() => this.createDeliveriesTransaction(inserts), ATOMIC);
  }

  async getDelivery(id: number): Promise<DeliveryRow | null> {
    return this.run(() => this.deliveries.get(id));
  }

  async claimDelivery(id: number, options: ClaimDeliveryOptions = {}): Promise<DeliveryRow | null> {
    return this.write(() => this.deliveries.claimForSend(id, this.clock(), options.reclaimAfterSeconds ?? 0));
  }

  async markDeliverySent(id: number, platformMessageId: string | null): Promise<void> {
    return this.write(() => this.deliveries.recordSent(id, platformMessageId, this.clock()));
  }

  async markDeliveryFailed(id: number, error: string, final: boolean): Promise<void> {
    return this.write(() => this.deliveries.recordFailure(id, error, final, this.clock()));
  }

  async setDeliveryEditTarget(id: number, editMessageId: string): Promise<boolean> {
    return this.write(() => this.deliveries.editInstead(id, editMessageId, this.clock()));
  }

  async listUnsentDeliveries(limit = 1000): Promise<DeliveryRow[]> {
    return this.run(() => this.deliveries.unsent(limit));
  }

  async deliveriesForSession(sessionId: string): Promise<DeliveryRow[]> {
    return this.run(() => this.deliveries.forSession(sessionId));
  }

  async recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<DeliveryRow | null> {
    return this.write(() => this.recordReceiptTransaction(platform, platformMessageId, receipt), ATOMIC);
  }

  // ---- AttachmentStore ----

  async inboxAttachments(inboxId: number): Promise<StoredAttachment[]> {
    return this.run(() => this.attachments.forInbox(inboxId));
  }

  async getAttachment(id: number): Promise<StoredAttachment | null> {
    return this.run(() => this.attachments.get(id));
  }

  // ---- AccessStore ----

  async pairingCodeFor(platform: string, userId: string, code: string, ttlSeconds: number): Promise<{ code: string; fresh: boolean }> {
    return this.write(() => this.pairings.codeFor(platform, userId, code, ttlSeconds, this.clock()), ATOMIC);
  }

  async approvePairing(code: string, approvedBy: string): Promise<PairingRow | null> {
    return this.write(() => this.pairings.approveCode(code, approvedBy, this.clock()), ATOMIC);
  }

  async isPaired(platform: string, userId: string): Promise<boolean> {
    return this.run(() => this.pairings.isPaired(platform, userId));
  }

  async listPairings(limit: number): Promise<PairingRow[]> {
    return this.run(() => this.pairings.listLive(limit, this.clock()));
  }

  async revokePairing(platform: string, userId: string): Promise<boolean> {
    return this.write(() => this.pairings.revoke(platform, userId));
  }

  // ---- UsageStore ----

  async usageTotals(filter: UsageFilter): Promise<UsageTotals[]> {
    return this.run(() => this.usage.sum(filter));
  }

  // ---- StoreLifecycle ----

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wakeups.close();
    await this.checkpointer?.stop();
    this.db.close();
  }
}
