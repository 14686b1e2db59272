// PostgresStore: SessionStore on PostgreSQL, for gateways on several machines. Same semantics as
// the SQLite SessionDB: the lease and its fence in transactions with the database's clock, the
// inbox's permanent uniqueness, the compression lineage, the deliveries ledger. Lease and fence
// SQL lives in lease.ts; the waiting loop and the in-process wake-ups are shared with SQLite.
import type pg from "pg";
import { toMessageRow, transcriptFromRows } from "../conversation.js";
import { SessionDBClosedError, UnknownSessionError } from "../errors.js";
import { thisHost } from "../holder.js";
import { waitForLease, type LeaseAttempt } from "../lease-admission.js";
import { StoreWakeups } from "../lease-wakeups.js";
import { DEFAULT_POOL_SIZE, positiveSeconds, STORE_DEFAULTS, type StoreOptions } from "../store-options.js";
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
  WakeUpView,
} from "../types.js";
import { PgAttachmentSql } from "./attachments.js";
import { PgPairingSql } from "./pairings.js";
import { PgUsageSql } from "./usage.js";
import {
  allInOrder,
  checkSchemaName,
  createPool,
  DEFAULT_SCHEMA,
  describeDatabase,
  inTransaction,
  isTransientPgError,
  sendTogether,
} from "./connection.js";
import { PgDeliverySql } from "./deliveries.js";
import { PgInboxSql } from "./inbox.js";
import { recordInboundBatch } from "./inbox-batch.js";
import { PgLeaseSql } from "./lease.js";
import { TranscriptRows } from "../transcript-rows.js";
import { PgMessageSql } from "./messages.js";
import { migrateSchema } from "./migrations.js";
import { PgSessionSql } from "./sessions.js";
import { SharedTrips } from "./shared-trips.js";
import { PgTurnStartReads } from "./turn-start.js";

export interface PostgresStoreOptions extends StoreOptions {
  /** postgres://user:password@host:port/database (or a unix socket: ?host=/run/postgresql). */
  connectionString: string;
  /** The schema holding the tables, created if missing. Default "switchboard". */
  schema?: string;
  /** Connections in this store's pool. Default DEFAULT_POOL_SIZE; the leases' pool has half (at least 2). */
  maxConnections?: number;
  /**
   * How long a statement waits for a locked row before giving up. A lease waiter counts that as
   * contention (onContended) and tries again; a fenced flush fails. Default 5000 ms.
   */
  lockTimeoutMs?: number;
}

/** A foreign-key violation on messages.session_id: the session has no row. */
function isMissingSession(err: unknown): boolean {
  const pgError = err as { code?: unknown; constraint?: unknown };
  return pgError.code === "23503" && pgError.constraint === "messages_session_id_fkey";
}

export class PostgresStore implements SessionStore {
  /** Which database and schema (no credentials): waiters on the same one in this process wake each other. */
  readonly storeKey: string;
  private readonly sessions: PgSessionSql;
  private readonly messages = new PgMessageSql();
  /** Transcript rows read before (see transcript-rows.ts): a reload reads the rows added since, checked. */
  private readonly transcripts: TranscriptRows;
  private readonly leases: PgLeaseSql;
  private readonly inbox = new PgInboxSql();
  private readonly deliveries = new PgDeliverySql();
  private readonly attachments = new PgAttachmentSql();
  private readonly pairings = new PgPairingSql();
  private readonly usage = new PgUsageSql();
  private readonly wakeups: StoreWakeups;
  private readonly pollIntervalMs: number;
  private readonly defaultTtlSeconds: number;
  private readonly defaultWaitSeconds: number;
  /** Null: the database's clock. */
  private readonly testClock: (() => number) | null;
  /** Fenced flushes (and delivery marks) asked for in one pass of the event loop: one write, one transaction, one commit. */
  private readonly flushTrips: SharedTrips;
  /** Lease steps (admission with its reads, release with the head's read) of one pass: one write. */
  private readonly leaseTrips: SharedTrips;
  /** The turn's first reads, sent with its admission (admitAndRead). */
  private readonly turnStart: PgTurnStartReads;
  private closed = false;

  /** Connect, create the schema if missing and migrate it (under an advisory lock), then serve. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = checkSchemaName(options.schema ?? DEFAULT_SCHEMA);
    const poolSize = options.maxConnections ?? DEFAULT_POOL_SIZE;
    if (!Number.isInteger(poolSize) || poolSize < 1) throw new RangeError(`DATABASE_POOL_SIZE: ${poolSize} is not a whole number of connections >= 1`);
    const pool = createPool({
      connectionString: options.connectionString,
      schema,
      maxConnections: poolSize,
      lockTimeoutMs: options.lockTimeoutMs ?? 5_000,
    });
    const leasePool = createPool({
      connectionString: options.connectionString,
      schema,
      maxConnections: Math.max(2, Math.ceil(poolSize / 2)),
      lockTimeoutMs: options.lockTimeoutMs ?? 5_000,
      asyncCommit: true,
    });
    try {
      await migrateSchema(pool, schema);
    } catch (err) {
      await Promise.all([pool.end(), leasePool.end()]).catch(() => undefined);
      throw err;
    }
    return new PostgresStore(pool, leasePool, schema, options);
  }

  private constructor(
    private readonly pool: pg.Pool,
    /**
     * Admission, refresh and release commit without waiting for the disk (a flush costs several ms
     * per handoff). Safe because WAL is one ordered log: the fenced flush that depends on a lease
     * commits synchronously, which flushes every earlier record with it, the lease's included. A
     * database crash can only lose lease changes no durable write depended on yet: a lost acquire
     * fences its holder out; a lost release leaves a lease that expires (or is reaped) as usual;
     * a lost input stored at admission leaves its inbox row pending, and its turn is run again.
     */
    private readonly leasePool: pg.Pool,
    readonly schema: string,
    options: PostgresStoreOptions,
  ) {
    this.storeKey = describeDatabase(options.connectionString, schema);
    this.flushTrips = new SharedTrips(pool, "transaction");
    this.leaseTrips = new SharedTrips(leasePool, "pipeline");
    this.sessions = new PgSessionSql(schema);
    this.leases = new PgLeaseSql(options.hostname ?? thisHost());
    this.pollIntervalMs = options.pollIntervalMs ?? STORE_DEFAULTS.pollIntervalMs;
    this.defaultTtlSeconds = options.defaultTtlSeconds ?? STORE_DEFAULTS.defaultTtlSeconds;
    this.defaultWaitSeconds = options.defaultWaitSeconds ?? STORE_DEFAULTS.defaultWaitSeconds;
    this.testClock = options.now ?? null;
    this.transcripts = new TranscriptRows(options.transcriptCacheBytes);
    this.turnStart = new PgTurnStartReads(this.sessions, this.messages, this.attachments, this.inbox, this.transcripts, () => this.now());
    this.wakeups = new StoreWakeups(this.storeKey, options.notifier ?? null);
  }

  // ---- plumbing ----

  /** The clock parameter of a statement: null lets the database read its own. */
  private now(): number | null {
    return this.testClock?.() ?? null;
  }

  private assertOpen(): void {
    if (this.closed) throw new SessionDBClosedError();
  }

  private async run<T>(work: (db: pg.Pool) => Promise<T>): Promise<T> {
    this.assertOpen();
    return work(this.pool);
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    return inTransaction(this.pool, work);
  }

  /** Lease statements, on the pool that commits without waiting for the WAL flush. */
  private async runLease<T>(work: (db: pg.Pool) => Promise<T>): Promise<T> {
    this.assertOpen();
    return work(this.leasePool);
  }



  // ---- TranscriptStore ----

  async createSession(id: string, input: CreateSessionInput): Promise<SessionRow> {
    return this.run((db) => this.sessions.create(db, id, input, this.now(), true));
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return this.run((db) => this.sessions.get(db, id));
  }

  async endSession(id: string, reason: string): Promise<void> {
    return this.run((db) => this.sessions.endSession(db, id, reason, this.now()));
  }

  async sessionKeysWithPrefix(prefix: string, limit = 100_000): Promise<string[]> {
    return this.run((db) => this.sessions.keysWithPrefix(db, prefix, limit));
  }

  /** Newest activity first; last_activity is the newest message's timestamp (null without messages). */
  async listSessions(options: { limit?: number } = {}): Promise<SessionSummary[]> {
    return this.run((db) => this.sessions.listRecent(db, options.limit ?? 100));
  }

  async ensureSessionForKey(sessionKey: string, newId: string, input: CreateSessionInput): Promise<SessionRow> {
    // The common case (the key has a live session) is a read: no lock per inbound message.
    const live = await this.run((db) => this.sessions.liveForKey(db, sessionKey));
    return live ?? this.transaction((client) => this.sessions.ensureForKey(client, sessionKey, newId, input, this.now()));
  }

  async resolveTip(sessionId: string): Promise<string> {
    return this.run((db) => this.sessions.tipOf(db, sessionId));
  }

  async conversationIdOf(sessionId: string): Promise<string> {
    return this.run((db) => this.sessions.conversationIdOf(db, sessionId));
  }

  async addressedSession(sessionId: string): Promise<{ conversationId: string; source: string | null }> {
    return this.run((db) => this.sessions.addressed(db, sessionId));
  }

  async appendMessage(sessionId: string, message: ConversationMessage): Promise<number> {
    const { messageIds } = await this.flushTurn(sessionId, [message]);
    return messageIds[0];
  }

  async appendMessagesBatch(sessionId: string, messages: ConversationMessage[], options: AppendBatchOptions = {}): Promise<number[]> {
    return (await this.flushTurn(sessionId, messages, options)).messageIds;
  }

  /**
   * The fenced flush: the fence, the transcript rows, the inbox completion and the ledger rows in
   * one transaction. A turn's flush (a holder, no attachments) is one statement, atomic by itself
   * (no BEGIN or COMMIT to send): its fence locks the lease row and each write runs only when the
   * holder holds the lease, so a lost lease writes nothing. Rows with attachments, which are stored
   * by the rows' new ids, go step by step in a transaction after its fence.
   */
  async flushTurn(sessionId: string, messages: ConversationMessage[], options: AppendBatchOptions = {}): Promise<FlushResult> {
    const now = this.now();
    const holder = options.turnLeaseHolder ?? null;
    const completion = options.endRecords?.completeInbox;
    const deliveries = options.endRecords?.deliveries ?? [];
    const usage = options.endRecords?.usage;
    const writes = (client: pg.PoolClient) =>
      [
        this.messages.insertAll(client, sessionId, messages, now),
        completion ? this.inbox.completeRows(client, completion.ids, completion.status ?? "done", completion.reply, null, now) : Promise.resolve(),
        this.deliveries.insertAll(client, deliveries, now),
        usage ? this.usage.insert(client, usage, now) : Promise.resolve(),
      ] as const;
    try {
      const fenceKey = holder === null ? null : await this.conversationIdOf(sessionId);
      if (fenceKey !== null && holder !== null && !messages.some((message) => message.attachments?.length)) {
        const flush = { sessionId, messages, completion: completion ? { ids: completion.ids, status: completion.status ?? "done", reply: completion.reply } : null, deliveries, ...(usage ? { usage } : {}) };
        this.assertOpen();
        const row = await this.flushTrips.run((client) => this.leases.sendFlush(client, fenceKey, holder, flush, now));
        const written = this.leases.flushOutcome(row, fenceKey, holder);
        if (written.messageIds.length !== messages.length) throw new Error(`fenced flush of ${sessionId}: ${written.messageIds.length} of ${messages.length} rows written`);
        return written;
      }
      return await this.transaction(async (client) => {
        if (fenceKey !== null && holder !== null) this.leases.checkFence(await this.leases.fence(client, fenceKey, holder, now), fenceKey, holder);
        const [messageIds, , deliveryIds] = await allInOrder(sendTogether(client, () => writes(client)));
        for (const [index, message] of messages.entries()) {
          if (message.attachments?.length) await this.attachments.storeForMessage(client, sessionId, messageIds[index], message.attachments, now);
        }
        return { messageIds, deliveryIds };
      });
    } catch (err) {
      throw isMissingSession(err) ? new UnknownSessionError(sessionId) : err;
    }
  }

  // Messages are read before their attachments: a message's attachments commit with it (one flush),
  // so every message read has all of its attachments in the later read.
  async getMessages(sessionId: string): Promise<MessageRow[]> {
    const rows = await this.run((db) => this.messages.rows(db, sessionId));
    const attachments = await this.run((db) => this.attachments.bySessionMessage(db, sessionId, false));
    return rows.map((tuple) => {
      const row = toMessageRow(sessionId, tuple);
      const held = attachments.get(row.id);
      if (held) row.attachments = held;
      return row;
    });
  }

  /** The model-ready transcript; `repairAlternation` applies repairToolPairing (see conversation.ts). */
  async getMessagesAsConversation(sessionId: string, options: ConversationReadOptions = {}): Promise<ConversationMessage[]> {
    return this.run((db) => this.conversationOf(db, sessionId, options));
  }

  /** On the pool, which may run each statement on another connection: the rows, then their attachments. */
  private async conversationOf(db: pg.Pool, sessionId: string, options: ConversationReadOptions): Promise<ConversationMessage[]> {
    const rows = await this.transcripts.readChecked(
      sessionId,
      (afterId, heldCount) => this.messages.rowsAfterIfUnchanged(db, sessionId, afterId, heldCount),
      () => this.messages.rows(db, sessionId),
    );
    return transcriptFromRows(rows, await this.attachments.bySessionMessage(db, sessionId, true), options);
  }

  async hasPlatformMessageId(sessionId: string, platformMessageId: string): Promise<boolean> {
    return this.run((db) => this.messages.hasPlatformMessageId(db, sessionId, platformMessageId));
  }

  // ---- LeaseStore ----

  async tryAcquireSessionTurnLease(sessionId: string, holder: string, options: { ttlSeconds?: number } = {}): Promise<boolean> {
    const ttl = positiveSeconds(options.ttlSeconds ?? this.defaultTtlSeconds, "ttlSeconds");
    const conversationId = await this.conversationIdOf(sessionId);
    return (await this.runLease((db) => this.leases.tryAcquire(db, conversationId, holder, ttl, this.now()))).acquired;
  }

  async acquireSessionTurnLease(sessionId: string, holder: string, options: LeaseAcquireOptions = {}): Promise<boolean> {
    const ttl = positiveSeconds(options.ttlSeconds ?? this.defaultTtlSeconds, "ttlSeconds");
    const reading = options.readUnderLease;
    let read: TurnStartRead | null = null;
    const acquired = await waitForLease(
      {
        resolveConversationId: () => this.conversationIdOf(sessionId),
        attempt: (conversationId) => {
          if (!reading) return this.runLease((db) => this.leases.tryAcquire(db, conversationId, holder, ttl, this.now()));
          return this.admitAndRead(conversationId, holder, ttl, reading).then(({ attempt, started }) => {
            if (attempt.acquired) read = started;
            return attempt;
          });
        },
        isContended: isTransientPgError,
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
   * Admission and the turn's first reads in one round trip, without a transaction: the admission is
   * one statement (atomic alone, committed before the reads run, as they ran after it inside one
   * before), and the reads sent with it are dropped when it fails. A read that fails after the
   * lease was taken gives the lease back before the error is thrown.
   */
  private async admitAndRead(
    conversationId: string,
    holder: string,
    ttl: number,
    reading: NonNullable<LeaseAcquireOptions["readUnderLease"]>,
  ): Promise<{ attempt: LeaseAttempt; started: TurnStartRead | null }> {
    this.assertOpen();
    return this.leaseTrips.run(async (client) => {
      const [attempt, started] = await Promise.allSettled([
        this.leases.tryAcquire(client, conversationId, holder, ttl, this.now()),
        this.turnStart.issue(client, reading, conversationId, holder),
      ]);
      if (attempt.status === "rejected") throw attempt.reason;
      if (started.status === "fulfilled") return { attempt: attempt.value, started: started.value };
      if (attempt.value.acquired && (await this.leases.release(client, conversationId, holder).catch(() => false))) this.wakeups.announceRelease(conversationId);
      throw started.reason;
    });
  }

  async refreshSessionTurnLease(sessionId: string, holder: string, options: { ttlSeconds?: number } = {}): Promise<boolean> {
    const ttl = options.ttlSeconds === undefined ? undefined : positiveSeconds(options.ttlSeconds, "ttlSeconds");
    const conversationId = await this.conversationIdOf(sessionId);
    return this.runLease((db) => this.leases.refresh(db, conversationId, holder, ttl, this.now()));
  }

  async releaseSessionTurnLease(sessionId: string, holder: string): Promise<void> {
    const conversationId = await this.conversationIdOf(sessionId);
    const released = await this.runLease((db) => this.leases.release(db, conversationId, holder));
    if (released) this.wakeups.announceRelease(conversationId);
  }

  async releaseSessionTurnLeaseAndReadHead(sessionId: string, holder: string): Promise<InboxRow | null> {
    const conversationId = await this.conversationIdOf(sessionId);
    // Two statements sent together, each its own transaction: the DELETE commits before the head's
    // read takes its snapshot, so a row committed before the release is read here, and the wake-up
    // of one committed after it finds the lease free. (One statement could not: its read's
    // snapshot would be taken before the delete.)
    this.assertOpen();
    const [released, pending] = await this.leaseTrips.run((client) =>
      allInOrder([this.leases.release(client, conversationId, holder), this.inbox.pendingForSession(client, conversationId, 1)] as const),
    );
    const head = pending[0] ?? null;
    if (released) this.wakeups.announceRelease(conversationId);
    return head;
  }

  async liveSessionTurnLeaseHolder(sessionId: string): Promise<string | null> {
    const conversationId = await this.conversationIdOf(sessionId);
    return this.run((db) => this.leases.liveHolder(db, conversationId, this.now()));
  }

  onSessionTurnLeaseReleased(conversationId: string, listener: () => void): () => void {
    return this.wakeups.listen(conversationId, listener);
  }

  async staleSessionTurnLeases(): Promise<StaleLease[]> {
    return this.run((db) => this.leases.listStale(db, this.now()));
  }

  async sessionTurnLeasesOfThisProcess(): Promise<Array<{ conversationId: string; holder: string }>> {
    return this.run((db) => this.leases.listHeldByThisProcess(db));
  }

  async reapSessionTurnLease(conversationId: string, holder: string): Promise<boolean> {
    const reaped = await this.transaction((client) => this.leases.reap(client, conversationId, holder, this.now()));
    if (reaped) this.wakeups.announceRelease(conversationId);
    return reaped;
  }

  async getSessionTurnLease(sessionId: string): Promise<{ holder: string; acquired_at: number; expires_at: number } | null> {
    const conversationId = await this.conversationIdOf(sessionId);
    return this.run((db) => this.leases.get(db, conversationId));
  }

  // ---- InboxStore ----

  async recordInbound(insert: InboxInsert): Promise<{ inserted: boolean; row: InboxRow }> {
    const uploads = insert.attachments ?? [];
    if (uploads.length === 0) return this.run((db) => this.inbox.record(db, insert, this.now(), null));
    // With attachments, the row and its images are one transaction: a turn never sees one without the other.
    return this.transaction(async (client) => {
      const now = this.now();
      const recorded = await this.inbox.record(client, insert, now, null);
      if (recorded.inserted) await this.attachments.insertForInbox(client, recorded.row.id, uploads, now);
      return recorded;
    });
  }

  /** Group commit: every row (with its images) in one transaction, one commit, in the given order. */
  async recordInboundBatch(inserts: ReadonlyArray<InboxInsert | KeyedInboxInsert>): Promise<Array<{ inserted: boolean; row: InboxRow }>> {
    if (inserts.length === 0) return [];
    return this.run((pool) => recordInboundBatch(pool, { inbox: this.inbox, sessions: this.sessions, attachments: this.attachments }, inserts, this.now()));
  }

  /** A duplicate of a message already recorded returns the existing row unchanged. */
  async recordRejected(insert: InboxInsert, reason: string): Promise<InboxRow> {
    return (await this.run((db) => this.inbox.record(db, insert, this.now(), reason))).row;
  }

  async getInboxRow(id: number): Promise<InboxRow | null> {
    return this.run((db) => this.inbox.get(db, id));
  }

  async findInboxRow(platform: string, platformMessageId: string): Promise<InboxRow | null> {
    return this.run((db) => this.inbox.find(db, platform, platformMessageId));
  }

  async markInboxEnqueued(ids: number[]): Promise<void> {
    return this.run((db) => this.inbox.markAsEnqueued(db, ids, this.now()));
  }

  async pendingInbox(sessionId: string, limit = 100): Promise<InboxRow[]> {
    return this.run((db) => this.inbox.pendingForSession(db, sessionId, limit));
  }

  async wakeUpView(conversationId: string, inboxId: number | null): Promise<WakeUpView> {
    const leaseKey = await this.conversationIdOf(conversationId);
    // Three reads side by side on the pool: a wake-up waits for one round trip, not three.
    const [row, head, liveHolder] = await this.run((db) =>
      Promise.all([
        inboxId === null ? null : this.inbox.get(db, inboxId),
        this.inbox.pendingForSession(db, conversationId, 1).then((rows) => rows[0] ?? null),
        this.leases.liveHolder(db, leaseKey, this.now()),
      ]),
    );
    return { row, head, liveHolder };
  }

  async listPendingInbox(limit = 1000): Promise<InboxRow[]> {
    return this.run((db) => this.inbox.allPending(db, limit));
  }

  async unclaimedPendingHeads(olderThanSeconds: number, limit: number): Promise<Array<{ conversationId: string; inboxId: number }>> {
    return this.run((db) => this.inbox.unclaimedHeads(db, olderThanSeconds, limit, this.now()));
  }

  /** Only pending rows change: completing a settled row again is a no-op. */
  async completeInbox(ids: number[], status: Exclude<InboxStatus, "pending">, reply: string | null, reason: string | null = null): Promise<void> {
    return this.run((db) => this.inbox.completeRows(db, ids, status, reply, reason, this.now()));
  }

  async inboxCounts(): Promise<Record<InboxStatus, number>> {
    return this.run((db) => this.inbox.counts(db));
  }

  // ---- DeliveryStore ----

  async createDeliveries(inserts: DeliveryInsert[]): Promise<number[]> {
    // One INSERT statement: all rows or none.
    return this.run((db) => this.deliveries.insertAll(db, inserts, this.now()));
  }

  async getDelivery(id: number): Promise<DeliveryRow | null> {
    return this.run((db) => this.deliveries.get(db, id));
  }

  // A delivery's claim and marks are one statement each: those of one pass of the event loop
  // share a write and a commit with the pass's flushes (flushTrips).
  async claimDelivery(id: number, options: ClaimDeliveryOptions = {}): Promise<DeliveryRow | null> {
    this.assertOpen();
    return this.flushTrips.run((client) => this.deliveries.claimForSend(client, id, this.now(), options.reclaimAfterSeconds ?? 0));
  }

  async markDeliverySent(id: number, platformMessageId: string | null): Promise<void> {
    this.assertOpen();
    return this.flushTrips.run((client) => this.deliveries.recordSent(client, id, platformMessageId, this.now()));
  }

  async markDeliveryFailed(id: number, error: string, final: boolean): Promise<void> {
    this.assertOpen();
    return this.flushTrips.run((client) => this.deliveries.recordFailure(client, id, error, final, this.now()));
  }

  async setDeliveryEditTarget(id: number, editMessageId: string): Promise<boolean> {
    return this.run((db) => this.deliveries.editInstead(db, id, editMessageId, this.now()));
  }

  async listUnsentDeliveries(limit = 1000): Promise<DeliveryRow[]> {
    return this.run((db) => this.deliveries.unsent(db, limit));
  }

  async deliveriesForSession(sessionId: string): Promise<DeliveryRow[]> {
    return this.run((db) => this.deliveries.forSession(db, sessionId));
  }

  async recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<DeliveryRow | null> {
    return this.transaction((client) => this.deliveries.recordReceipt(client, platform, platformMessageId, receipt, this.now()));
  }

  // ---- AttachmentStore ----

  async inboxAttachments(inboxId: number): Promise<StoredAttachment[]> {
    return this.run((db) => this.attachments.forInbox(db, inboxId));
  }

  async getAttachment(id: number): Promise<StoredAttachment | null> {
    return this.run((db) => this.attachments.get(db, id));
  }

  // ---- AccessStore ----

  async pairingCodeFor(platform: string, userId: string, code: string, ttlSeconds: number): Promise<{ code: string; fresh: boolean }> {
    return this.transaction((client) => this.pairings.codeFor(client, platform, userId, code, ttlSeconds, this.now()));
  }

  async approvePairing(code: string, approvedBy: string): Promise<PairingRow | null> {
    return this.transaction((client) => this.pairings.approveCode(client, code, approvedBy, this.now()));
  }

  async isPaired(platform: string, userId: string): Promise<boolean> {
    return this.run((db) => this.pairings.isPaired(db, platform, userId));
  }

  async listPairings(limit: number): Promise<PairingRow[]> {
    return this.run((db) => this.pairings.listLive(db, limit, this.now()));
  }

  async revokePairing(platform: string, userId: string): Promise<boolean> {
    return this.run((db) => this.pairings.revoke(db, platform, userId));
  }

  // ---- UsageStore ----

  async usageTotals(filter: UsageFilter): Promise<UsageTotals[]> {
    return this.run((db) => this.usage.sum(db, filter));
  }

  // ---- StoreLifecycle ----

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wakeups.close();
    await Promise.all([this.pool.end(), this.leasePool.end()]);
  }
}
