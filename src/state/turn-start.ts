// The turn's first reads under a lease just taken (LeaseAcquireOptions.readUnderLease), on
// SQLite: in the admission's own BEGIN IMMEDIATE, so they see what the lease now guards. A warm-up
// read before it leaves only the newest transcript rows to read there, and the rows become
// messages (with their images' bytes) after the commit.
import type { Database } from "better-sqlite3";
import { transcriptFromRows, type StoredMessageTuple } from "./conversation.js";
import type { InboxSql } from "./inbox.js";
import type { LeaseAttempt } from "./lease-admission.js";
import type { LeaseSql } from "./lease.js";
import type { MessageSql } from "./messages.js";
import type { SessionSql } from "./sessions.js";
import type { TranscriptRows } from "./transcript-rows.js";
import type { InputUnderLease, LeaseAcquireOptions, MessageAttachment, TurnStartRead } from "./types.js";

/** Bound on the remembered tips of compressed conversations (forgotten all at once past it). */
const MAX_TIPS_READ = 10_000;

/** A transcript's stored rows and their images, as read in one transaction. */
export interface TranscriptRowsRead {
  rows: StoredMessageTuple[];
  attachments: Map<number, MessageAttachment[]>;
}

export type TurnStartReading = Omit<NonNullable<LeaseAcquireOptions["readUnderLease"]>, "onRead">;

/** The turn's first read as its transaction returns it: rows, turned into messages after the commit. */
export interface TurnStartRows extends Omit<TurnStartRead, "transcript"> {
  transcript: TranscriptRowsRead | null;
}

export function turnStartReadOf(read: TurnStartRows): TurnStartRead {
  return { ...read, transcript: read.transcript ? transcriptFromRows(read.transcript.rows, read.transcript.attachments, { repairAlternation: true, includeRowIds: true }) : [] };
}

/** The store's parts the turn's first reads use. */
export interface TurnStartParts {
  sessions: SessionSql;
  messages: MessageSql;
  inbox: InboxSql;
  leases: LeaseSql;
  transcripts: TranscriptRows;
  clock: () => number;
  /** The store's own read of a transcript's rows (without the images' bytes when false). */
  transcriptRowsOf: (sessionId: string, withImageBytes: boolean) => TranscriptRowsRead;
}

export class TurnStartReads {
  /** Compressed conversations' tips as the lease's reads last found them (a hint: the read under the lease decides). */
  private readonly tipsRead = new Map<string, string>();
  /** The lease's attempt and, when it is taken, the turn's first reads: one BEGIN IMMEDIATE. */
  readonly acquireAndRead: (conversationId: string, holder: string, ttl: number, reading: TurnStartReading) => { attempt: LeaseAttempt; read: TurnStartRows | null };
  /** The warm-up read, outside the write lock. */
  readonly warm: (sessionId: string) => void;

  constructor(
    db: Database,
    private readonly parts: TurnStartParts,
  ) {
    const { leases, inbox, sessions, messages, transcripts } = parts;
    const acquireAndRead = db.transaction((conversationId: string, holder: string, ttl: number, reading: TurnStartReading) => {
      const now = parts.clock();
      const attempt = leases.tryAcquireWithin(conversationId, holder, ttl, now);
      if (!attempt.acquired) return { attempt, read: null };
      let read = this.turnStartRows(reading.sessionId);
      const limit = reading.pendingInboxLimit ?? 0;
      if (limit > 0) read = { ...read, pendingInbox: inbox.pendingForSession(conversationId, limit) };
      const inputRowId = reading.input ? this.storeInputUnderLease(conversationId, read.sessionId, reading.input, now) : null;
      return { attempt, read: inputRowId === null ? read : { ...read, sessionExists: true, inputRowId } };
    });
    this.acquireAndRead = (conversationId, holder, ttl, reading) => acquireAndRead.immediate(conversationId, holder, ttl, reading);
    // A read transaction: it takes no write lock.
    const warmTranscript = db.transaction((sessionId: string) => {
      const tip = sessions.tipOf(sessionId) || sessionId;
      if (!transcripts.holds(tip)) transcripts.warm(tip, (afterId) => messages.rowsAfter(tip, afterId));
    });
    this.warm = (sessionId) => warmTranscript.deferred(sessionId);
  }

  /** Whether a warm-up read would leave the lease's transaction less to read: the transcript is not held (or too long to hold). */
  worthWarming(sessionId: string): boolean {
    return !this.parts.transcripts.holds(this.tipsRead.get(sessionId) ?? sessionId);
  }

  /** What the lease's transaction reads for the turn: the tip, whether it has a row, its transcript rows. */
  private turnStartRows(sessionId: string): TurnStartRows {
    const { sessions } = this.parts;
    const tip = sessions.tipOf(sessionId) || sessionId;
    this.rememberTip(sessionId, tip);
    const sessionExists = sessions.get(tip) !== null;
    // The images' bytes are read after the commit (withImageBytes): under the lock, only which ones.
    return { sessionId: tip, sessionExists, transcript: sessionExists ? this.parts.transcriptRowsOf(tip, false) : null };
  }

  /**
   * InputUnderLease, in the admission's transaction after its reads (the lease is held): the
   * message's row id, or null when it is not to be stored here (see InputUnderLease).
   */
  private storeInputUnderLease(conversationId: string, tip: string, input: InputUnderLease, now: number): number | null {
    const { inbox, messages, sessions } = this.parts;
    if (input.message.attachments?.length) return null;
    if (inbox.pendingForSession(conversationId, 1)[0]?.id !== input.inboxId) return null;
    const platformId = input.message.platform_message_id ?? null;
    if (platformId !== null && messages.hasPlatformMessageId(tip, platformId)) return null;
    if (!sessions.has(tip)) sessions.create(tip, input.session, now);
    return messages.insertAll(tip, [input.message], now)[0];
  }

  /** A compressed conversation's tip as last read, so the next turn's warm-up checks the right transcript. */
  private rememberTip(sessionId: string, tip: string): void {
    if (tip === sessionId) {
      this.tipsRead.delete(sessionId);
      return;
    }
    if (this.tipsRead.size >= MAX_TIPS_READ) this.tipsRead.clear();
    this.tipsRead.set(sessionId, tip);
  }
}
