// Admission: take the session turn lease (waiting behind a live holder, honouring interrupts),
// then, if the turn waited, read the durable state the previous holder left behind.
import type { ConversationMessage, InputUnderLease, SessionStore, TurnStartRead } from "../state/types.js";
import { raceAbort } from "./interrupts.js";
import { carriedInputs } from "./messages.js";

export type Admission =
  /** `read`: the turn's starting state, read in the admission's own transaction (null when the store did not). */
  | { kind: "admitted"; waited: boolean; contended: boolean; read: TurnStartRead | null }
  | { kind: "timeout" }
  /** `giveUpWhenHeld`: a live holder has the lease. */
  | { kind: "held" }
  | { kind: "aborted" }
  | { kind: "error"; message: string };

export interface AcquireInput {
  store: SessionStore;
  conversationId: string;
  holder: string;
  ttlSeconds: number;
  waitSeconds: number;
  /** Aborted by interrupt(): stop waiting at once. */
  signal: AbortSignal;
  shouldAbort: () => boolean;
  /** A live holder has the lease. */
  onWait: (elapsedSeconds: number) => void;
  /** Read this session's tip, row and transcript in the transaction that takes the lease. */
  readSessionId?: string;
  /** With readSessionId: also read the conversation's pending inbox head, up to this many rows. */
  pendingInboxLimit?: number;
  /** With readSessionId: the turn's first input, for the same step to store (see InputUnderLease). */
  input?: InputUnderLease;
  /** Return `held` at once when a live holder has the lease, instead of waiting. */
  giveUpWhenHeld?: boolean;
}

/** The conversation id (the lease's key), or the session id itself when that cannot be read. */
export async function conversationIdFor(store: SessionStore, sessionId: string): Promise<string> {
  try {
    return (await store.conversationIdOf(sessionId)) || sessionId;
  } catch {
    return sessionId;
  }
}

export async function acquireTurnLease(input: AcquireInput): Promise<Admission> {
  const { store, conversationId, holder } = input;
  let waited = false;
  let contended = false;
  let abandoned = false;
  let held = false;
  let read: TurnStartRead | null = null;
  const readSessionId = input.readSessionId;
  const acquiring = (async () =>
    store.acquireSessionTurnLease(conversationId, holder, {
      ttlSeconds: input.ttlSeconds,
      waitSeconds: input.waitSeconds,
      onWait: (elapsed) => {
        waited = true;
        input.onWait(elapsed);
      },
      onContended: () => {
        contended = true;
      },
      shouldAbort: () => abandoned || input.shouldAbort(),
      ...(input.giveUpWhenHeld ? { onHeldGiveUp: () => (held = true) } : {}),
      ...(readSessionId
        ? {
            readUnderLease: {
              sessionId: readSessionId,
              pendingInboxLimit: input.pendingInboxLimit,
              ...(input.input ? { input: input.input } : {}),
              onRead: (value: TurnStartRead) => (read = value),
            },
          }
        : {}),
    }))();
  let raced;
  try {
    raced = await raceAbort(acquiring, input.signal);
  } catch (err) {
    return { kind: "error", message: err instanceof Error ? err.message : String(err) };
  }
  if (raced.aborted) {
    abandoned = true;
    // The store may still grant the lease before it next checks shouldAbort: hand it back.
    acquiring
      .then((granted) => (granted ? store.releaseSessionTurnLease(conversationId, holder) : undefined))
      .catch(() => {});
    return { kind: "aborted" };
  }
  if (raced.value) return { kind: "admitted", waited, contended, read };
  if (held) return { kind: "held" };
  return input.shouldAbort() ? { kind: "aborted" } : { kind: "timeout" };
}

export interface Reloaded {
  /** The tip: the newest session of the compacted chain. */
  sessionId: string;
  history: ConversationMessage[];
  /** Whether the session row exists; null when it could not be read. */
  rowKnown: boolean | null;
  /** The history holds every message stored for the session (read under the lease): a platform id not in it is not stored. */
  holdsStoredTranscript: boolean;
}

/** The reload made of what admission read in its transaction: the same rules as reloadUnderLease for a readable store. */
export function reloadFromRead(read: TurnStartRead, callerHistory: ConversationMessage[]): Reloaded {
  if (!read.sessionExists) return { sessionId: read.sessionId, history: callerHistory, rowKnown: false, holdsStoredTranscript: false };
  return { sessionId: read.sessionId, history: [...read.transcript, ...carriedInputs(callerHistory)], rowKnown: true, holdsStoredTranscript: true };
}

/**
 * Reads durable state under the lease. The session row read here decides: a row -> the reload
 * (even empty) plus carried inputs; no row -> the caller's history object; unreadable -> the
 * reload when it has rows, else the caller's history.
 */
export async function reloadUnderLease(
  store: SessionStore,
  sessionId: string,
  callerHistory: ConversationMessage[],
): Promise<Reloaded> {
  let tip = sessionId;
  try {
    tip = (await store.resolveTip(sessionId)) || sessionId;
  } catch {
    // Unreadable chain: stay on the id we have.
  }
  let row: "present" | "absent" | "unknown";
  try {
    row = (await store.getSession(tip)) ? "present" : "absent";
  } catch {
    row = "unknown";
  }
  if (row === "absent") return { sessionId: tip, history: callerHistory, rowKnown: false, holdsStoredTranscript: false };
  let reloaded: ConversationMessage[] | null;
  try {
    reloaded = await store.getMessagesAsConversation(tip, { repairAlternation: true, includeRowIds: true });
  } catch {
    reloaded = null;
  }
  const rowKnown = row === "present" ? true : null;
  if (reloaded === null || (row === "unknown" && reloaded.length === 0)) {
    return { sessionId: tip, history: callerHistory, rowKnown, holdsStoredTranscript: false };
  }
  return { sessionId: tip, history: [...reloaded, ...carriedInputs(callerHistory)], rowKnown, holdsStoredTranscript: row === "present" };
}
