// The fenced flush: writes the messages of a turn that are not stored yet, in one
// appendMessagesBatch guarded by the turn lease holder. Each message object is written once:
// messages after the caller's history, plus carried inputs inside it. A write the fence rejects
// (TurnLeaseLostError) writes nothing and reports the cause "turn_lease".
import { TurnLeaseLostError } from "../state/errors.js";
import type { ConversationMessage, FlushExtras, SessionStore } from "../state/types.js";
import { PERSIST_AFTER_ADMISSION_INTERRUPT, isCarried, toStoredMessage } from "./messages.js";

/** The agent state the flush reads and updates. */
export interface FlushHost {
  store: SessionStore | null;
  persist: boolean;
  sessionId: string | null;
  platform: string;
  /** True once the session row is known to exist (then no create is attempted). */
  sessionRowKnown: boolean;
  activeSessionTurnLeaseHolder: string | null;
  lastPersistenceErrorCause: string | null;
  /** The message of the last failed write, for a warning. */
  lastPersistenceErrorMessage: string | null;
  /** Deliveries created by flush extras (the gateway enqueues them). */
  readonly flushedDeliveryIds: number[];
  readonly flushedMessages: WeakSet<ConversationMessage>;
}

export function isTurnLeaseLost(err: unknown): boolean {
  if (err instanceof TurnLeaseLostError) return true;
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "turn_lease";
}

/** The messages a flush would write, in order. */
export function unflushedMessages(
  host: Pick<FlushHost, "flushedMessages">,
  messages: readonly ConversationMessage[],
  conversationHistory: readonly ConversationMessage[] | null,
): ConversationMessage[] {
  const history = conversationHistory ?? [];
  const historyMembers = new Set(history);
  const pending: ConversationMessage[] = [];
  messages.forEach((message, index) => {
    if (host.flushedMessages.has(message) || message._row_id !== undefined) return;
    const inHistory = index < history.length || historyMembers.has(message);
    if (inHistory && !isCarried(message)) return;
    pending.push(message);
  });
  return pending;
}

/** Creates the session row on first write; a concurrent create by another writer is fine. */
export async function ensureSessionRow(host: FlushHost, store: SessionStore, sessionId: string): Promise<void> {
  if (host.sessionRowKnown) return;
  if (!(await store.getSession(sessionId))) {
    try {
      await store.createSession(sessionId, { source: host.platform });
    } catch (err) {
      if (!(await store.getSession(sessionId))) throw err;
    }
  }
  host.sessionRowKnown = true;
}

/**
 * Writes what is new; true when everything is stored (or there is nothing to store / persistence
 * is off), false when the write failed, with the cause in lastPersistenceErrorCause
 * ("turn_lease" when the fence refused it, else "error"); a later success leaves it as is.
 */
export async function flushMessagesToSessionDb(
  host: FlushHost,
  messages: readonly ConversationMessage[],
  conversationHistory: readonly ConversationMessage[] | null,
  extras?: FlushExtras,
): Promise<boolean> {
  const store = host.store;
  const sessionId = host.sessionId;
  if (!store || !host.persist || !sessionId) return true;
  const pending = unflushedMessages(host, messages, conversationHistory);
  if (pending.length === 0 && !extras) return true;
  try {
    await ensureSessionRow(host, store, sessionId);
    const rows = pending.map(toStoredMessage);
    const batch = { turnLeaseHolder: host.activeSessionTurnLeaseHolder, extras };
    let ids: number[];
    if (extras) {
      // flushTurn also reports the delivery rows the extras created.
      const written = await store.flushTurn(sessionId, rows, batch);
      ids = written.messageIds;
      host.flushedDeliveryIds.push(...written.deliveryIds);
    } else {
      ids = await store.appendMessagesBatch(sessionId, rows, batch);
    }
    pending.forEach((message, index) => {
      host.flushedMessages.add(message);
      // Stored now: no longer carried, so a later reload plus this object cannot write it twice.
      delete message[PERSIST_AFTER_ADMISSION_INTERRUPT];
      const rowId = Array.isArray(ids) ? ids[index] : undefined;
      if (typeof rowId === "number") message._row_id = rowId;
    });
    return true;
  } catch (err) {
    host.lastPersistenceErrorCause = isTurnLeaseLost(err) ? "turn_lease" : "error";
    host.lastPersistenceErrorMessage = err instanceof Error ? err.message : String(err);
    return false;
  }
}
