// The turn's first reads under a lease just taken (LeaseAcquireOptions.readUnderLease), on
// PostgreSQL: sent on the admission's connection right behind the admission (PostgresStore's
// admitAndRead), for the tip the session had at its last turn.
import type pg from "pg";
import { transcriptFromRows } from "../conversation.js";
import type { TranscriptRows } from "../transcript-rows.js";
import type { ConversationMessage, ConversationReadOptions, LeaseAcquireOptions, TurnStartRead } from "../types.js";
import type { PgAttachmentSql } from "./attachments.js";
import { allInOrder } from "./connection.js";
import type { PgInboxSql } from "./inbox.js";
import { pendingHeadStoringInput, type PendingHeadWithInput } from "./lease.js";
import type { PgMessageSql } from "./messages.js";
import type { PgSessionSql } from "./sessions.js";

/** Sessions whose tips are remembered; past it the memory starts again (a wrong guess costs one more read). */
const MAX_TIPS_REMEMBERED = 10_000;

export class PgTurnStartReads {
  /** The tip each session had at its last turn: the next turn's reads are sent for it before the tip is known. */
  private readonly tips = new Map<string, string>();

  constructor(
    private readonly sessions: PgSessionSql,
    private readonly messages: PgMessageSql,
    private readonly attachments: PgAttachmentSql,
    private readonly inbox: PgInboxSql,
    /** The store's transcript rows, shared with its other transcript reads. */
    private readonly transcripts: TranscriptRows,
    /** The clock parameter of a statement: null lets the database read its own. */
    private readonly now: () => number | null,
  ) {}

  /**
   * Under a lease just taken, on its connection: the tip, whether it has a row, its transcript
   * and the conversation's pending head. They go out with the admission itself, for the tip the
   * session had last time (nearly always its tip still); a tip that moved is read again.
   */
  issue(
    client: pg.PoolClient,
    reading: NonNullable<LeaseAcquireOptions["readUnderLease"]>,
    conversationId: string,
    holder: string,
  ): Promise<TurnStartRead> {
    const guess = this.tips.get(reading.sessionId) ?? reading.sessionId;
    const limit = reading.pendingInboxLimit ?? 0;
    const transcriptOptions = { repairAlternation: true, includeRowIds: true };
    const input = reading.input && !reading.input.message.attachments?.length ? reading.input : null;
    // With an input, the head is read by the statement that may store it (the same snapshot): it
    // is stored only for the tip guessed here, so a tip that moved leaves it to the turn's flush.
    // That statement also reads the tip and whether it has a row: no statement of their own then.
    const tipRead = input ? null : this.sessions.tipWithRow(client, reading.sessionId).then(({ tip, row }) => ({ tip, tipExists: row !== null }));
    const transcriptRead = this.conversationOn(client, guess, transcriptOptions);
    // In this order on the connection: the head's statement (which may write) after the reads.
    const headRead: Promise<PendingHeadWithInput | Omit<PendingHeadWithInput, "tip" | "tipExists"> | null> = input
      ? pendingHeadStoringInput(client, { sessionId: reading.sessionId, conversationId, tip: guess, holder, headSize: Math.max(1, limit) }, input, this.now())
      : limit > 0
        ? this.inbox.pendingForSession(client, conversationId, limit).then((pendingInbox) => ({ pendingInbox, inputRowId: null, createdSession: false }))
        : Promise.resolve(null);
    const issued = allInOrder([tipRead ?? Promise.resolve(null), transcriptRead, headRead] as const);
    return issued.then(async ([tipFound, guessedTranscript, head]) => {
      const found = tipFound ?? (head && "tip" in head ? head : null);
      if (!found) throw new Error(`admission of ${reading.sessionId}: the tip was not read`);
      const { tip, tipExists } = found;
      const inputRowId = head?.inputRowId ?? null;
      // Committed: a row created parentless is its own conversation's root for good.
      if (head?.createdSession) this.sessions.rememberRoot(tip);
      const sessionExists = tipExists || inputRowId !== null;
      let transcript = guessedTranscript;
      if (tip !== guess) {
        this.rememberTip(reading.sessionId, tip);
        transcript = sessionExists ? await this.conversationOn(client, tip, transcriptOptions) : [];
      }
      let read: TurnStartRead = { sessionId: tip, sessionExists, transcript: tipExists ? transcript : [] };
      if (head !== null && limit > 0) read = { ...read, pendingInbox: head.pendingInbox };
      return inputRowId === null ? read : { ...read, inputRowId };
    });
  }

  /**
   * conversationOf on one connection. A whole transcript's rows and their attachments are read in
   * one round trip, in that order (a connection runs what it is sent in order): the rows first, so
   * that every message read has all of its attachments in the later read. The newer rows of a
   * transcript held come with a flag from the same snapshot that says whether the session has any
   * attachment at all; only then are they read, after. When the rows have to be read again (a
   * lower id committed late), so are the attachments.
   */
  private async conversationOn(client: pg.PoolClient, sessionId: string, options: ConversationReadOptions): Promise<ConversationMessage[]> {
    let sent = false;
    let readAgain = false;
    let wholeSent = false;
    const seen = { attachments: true };
    const rowsRead = this.transcripts.readChecked(
      sessionId,
      (afterId, heldCount) => this.messages.rowsAfterIfUnchanged(client, sessionId, afterId, heldCount, seen),
      () => {
        readAgain = sent;
        wholeSent = !sent;
        return this.messages.rows(client, sessionId);
      },
    );
    const withRows = wholeSent ? this.attachments.bySessionMessage(client, sessionId, true) : Promise.resolve(null);
    sent = true;
    const [rows, attachedWithRows] = await allInOrder([rowsRead, withRows] as const);
    const attachments = readAgain || (attachedWithRows === null && seen.attachments) ? await this.attachments.bySessionMessage(client, sessionId, true) : attachedWithRows;
    return transcriptFromRows(rows, attachments ?? new Map(), options);
  }

  private rememberTip(sessionId: string, tip: string): void {
    if (this.tips.size >= MAX_TIPS_REMEMBERED) this.tips.clear();
    this.tips.set(sessionId, tip);
  }
}
