// What the fenced flush is made of (Turn.flush puts it together): which messages are new, the
// session row they need, and the one fenced batch that writes them with the turn's end records.
// Also the inputs a crashed turn already stored, which are neither stored nor sent twice.
import { TurnLeaseLostError } from "../state/errors.js";
import type { ConversationMessage, FlushResult, SessionStore, TurnEndRecords } from "../state/types.js";
import { isCarried, platformIdOf, toStoredMessage } from "./messages.js";
import type { Turn } from "./turn.js";

export function isTurnLeaseLost(err: unknown): boolean {
  if (err instanceof TurnLeaseLostError) return true;
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "turn_lease";
}

/** The messages a flush would write, in order: those after the history, plus carried inputs in it. */
export function unflushedMessages(
  stored: WeakSet<ConversationMessage>,
  messages: readonly ConversationMessage[],
  conversationHistory: readonly ConversationMessage[] | null,
): ConversationMessage[] {
  const history = conversationHistory ?? [];
  // A message with a row id is passed over first, so only history messages without one are looked
  // up: a stored transcript has ids on all of them, and there is no set however long it is (a turn
  // flushes at least twice, each time over the whole transcript).
  let unstoredHistory: Set<ConversationMessage> | null = null;
  for (const message of history) if (message._row_id === undefined) (unstoredHistory ??= new Set()).add(message);
  const pending: ConversationMessage[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index];
    if (message._row_id !== undefined || stored.has(message)) continue;
    const inHistory = index < history.length || (unstoredHistory?.has(message) ?? false);
    if (inHistory && !isCarried(message)) continue;
    pending.push(message);
  }
  return pending;
}

/** Creates the session row on first write; a concurrent create by another writer is fine. */
export async function ensureSessionRow(store: SessionStore, sessionId: string, source: string): Promise<void> {
  if (await store.getSession(sessionId)) return;
  try {
    await store.createSession(sessionId, { source });
  } catch (err) {
    if (!(await store.getSession(sessionId))) throw err;
  }
}

/**
 * One all-or-nothing batch, fenced by `holder` (no fence without one). Throws what the store
 * throws: a TurnLeaseLostError when the fence refused it.
 */
export async function writeFenced(
  store: SessionStore,
  sessionId: string,
  messages: readonly ConversationMessage[],
  options: { holder: string | null; endRecords?: TurnEndRecords },
): Promise<FlushResult> {
  const rows = messages.map(toStoredMessage);
  const batch = { turnLeaseHolder: options.holder, endRecords: options.endRecords };
  // flushTurn also reports the delivery rows the end records created.
  if (options.endRecords) return store.flushTurn(sessionId, rows, batch);
  const ids = await store.appendMessagesBatch(sessionId, rows, batch);
  return { messageIds: Array.isArray(ids) ? ids : [], deliveryIds: [] };
}

/**
 * An input whose platform id is already stored (a turn that crashed after flushing it) is not
 * stored again; when the history already shows it, it is not sent to the model twice either.
 * A history read from the store under the lease (`holdsStoredTranscript`) holds every stored
 * message, so an id it lacks is not stored and the store is not asked.
 */
export async function withoutStoredInputs(
  turn: Turn,
  inputs: readonly ConversationMessage[],
  history: readonly ConversationMessage[],
  options: { holdsStoredTranscript?: boolean } = {},
): Promise<ConversationMessage[]> {
  const inHistory = idsFoundIn(history, inputs);
  const fresh: ConversationMessage[] = [];
  for (const input of inputs) {
    const platformId = platformIdOf(input);
    if (platformId === null) {
      fresh.push(input);
      continue;
    }
    if (inHistory.has(platformId)) continue;
    if (!options.holdsStoredTranscript && (await isStored(turn, platformId))) turn.markStored(input);
    fresh.push(input);
  }
  return fresh;
}

/**
 * The inputs' platform ids that the history shows. One pass over the history against the few
 * ids asked about, rather than a set of every id in the conversation: that was built on every
 * turn, an entry per message, for inputs that are almost never there.
 */
function idsFoundIn(history: readonly ConversationMessage[], inputs: readonly ConversationMessage[]): Set<string> {
  const asked = new Set(inputs.map(platformIdOf).filter((id): id is string => id !== null));
  const found = new Set<string>();
  if (asked.size === 0) return found;
  for (const message of history) {
    const id = platformIdOf(message);
    if (id !== null && asked.has(id)) found.add(id);
  }
  return found;
}

async function isStored(turn: Turn, platformId: string): Promise<boolean> {
  const { store, persist } = turn.settings;
  if (!store || !persist || !turn.sessionId) return false;
  try {
    return await store.hasPlatformMessageId(turn.sessionId, platformId);
  } catch {
    return false;
  }
}
