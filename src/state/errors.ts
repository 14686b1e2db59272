// Errors the store raises with stable codes, so callers branch on `code`, not on message text.

/** A fenced write found the turn lease missing or held by someone else: nothing was written. */
export class TurnLeaseLostError extends Error {
  readonly code = "turn_lease" as const;
  readonly conversationId: string;
  readonly holder: string;
  /** The holder that owns the lease now, or null when no row exists. */
  readonly currentHolder: string | null;

  constructor(conversationId: string, holder: string, currentHolder: string | null) {
    super(
      currentHolder === null
        ? `turn lease for ${conversationId} is gone; ${holder} may not write`
        : `turn lease for ${conversationId} is held by another turn; ${holder} may not write`,
      { cause: "turn_lease" },
    );
    this.name = "TurnLeaseLostError";
    this.conversationId = conversationId;
    this.holder = holder;
    this.currentHolder = currentHolder;
  }
}

/** A message was appended to a session that has no row (create the session first). */
export class UnknownSessionError extends Error {
  readonly code = "session_not_found" as const;
  readonly sessionId: string;

  constructor(sessionId: string) {
    super(`session ${sessionId} does not exist`);
    this.name = "UnknownSessionError";
    this.sessionId = sessionId;
  }
}

/** The store (SQLite or PostgreSQL) was closed while a call was pending or after it was closed. */
export class SessionDBClosedError extends Error {
  readonly code = "db_closed" as const;
  constructor() {
    super("the session database is closed");
    this.name = "SessionDBClosedError";
  }
}
