// A stand-in SessionStore that records what the agent asks of it, in the spirit of the seed's
// _DB fake. Methods are plain instance methods, so a test can replace any of them.
import type {
  AppendBatchOptions,
  ConversationMessage,
  ConversationReadOptions,
  CreateSessionInput,
  DeliveryRow,
  InboxRow,
  WakeUpView,
  InboxStatus,
  LeaseAcquireOptions,
  FlushResult,
  MessageRow,
  SessionRow,
  SessionStore,
  StoredAttachment,
  SessionSummary,
  StaleLease,
} from "../../../src/state/types.js";

export type StubEvent =
  | ["acquire", string, string]
  | ["resolve", string]
  | ["reload", string, ConversationReadOptions | undefined]
  | ["release", string, string]
  | ["append", string, ConversationMessage[], AppendBatchOptions | undefined];

export function sessionRow(id: string, overrides: Partial<SessionRow> = {}): SessionRow {
  return {
    id,
    source: "test",
    session_key: null,
    chat_id: null,
    thread_id: null,
    user_id: null,
    parent_session_id: null,
    started_at: 0,
    ended_at: null,
    end_reason: null,
    title: null,
    model: null,
    ...overrides,
  };
}

function notUsed(name: string): never {
  throw new Error(`StubStore.${name} is not used by these tests`);
}

export class StubStore implements SessionStore {
  readonly events: StubEvent[] = [];
  sessionExists: boolean;
  acquireResult: boolean;

  constructor(options: { sessionExists?: boolean; acquireResult?: boolean } = {}) {
    this.sessionExists = options.sessionExists ?? true;
    this.acquireResult = options.acquireResult ?? true;
  }

  /** Names of the recorded lease/reload events, the seed's `[event[0] for event in db.events]`. */
  eventNames(): string[] {
    return this.events.filter((event) => event[0] !== "append").map((event) => event[0]);
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return this.sessionExists ? sessionRow(id) : null;
  }

  async acquireSessionTurnLease(sessionId: string, holder: string, options?: LeaseAcquireOptions): Promise<boolean> {
    this.events.push(["acquire", sessionId, holder]);
    if (options?.onWait && this.acquireResult === false) options.onWait(0);
    return this.acquireResult;
  }

  async resolveTip(sessionId: string): Promise<string> {
    this.events.push(["resolve", sessionId]);
    return "compressed-tip";
  }

  async getMessagesAsConversation(sessionId: string, options?: ConversationReadOptions): Promise<ConversationMessage[]> {
    this.events.push(["reload", sessionId, options]);
    return [{ role: "user", content: "durable latest" }];
  }

  async refreshSessionTurnLease(_sessionId: string, _holder: string): Promise<boolean> {
    return true;
  }

  async releaseSessionTurnLease(sessionId: string, holder: string): Promise<void> {
    this.events.push(["release", sessionId, holder]);
  }

  async conversationIdOf(sessionId: string): Promise<string> {
    return sessionId;
  }

  async addressedSession(sessionId: string): Promise<{ conversationId: string; source: string | null }> {
    return { conversationId: sessionId, source: null };
  }

  async appendMessagesBatch(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<number[]> {
    this.events.push(["append", sessionId, messages, options]);
    return messages.map((_, index) => index + 1);
  }

  async flushTurn(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<FlushResult> {
    return { messageIds: await this.appendMessagesBatch(sessionId, messages, options), deliveryIds: [] };
  }

  async hasPlatformMessageId(): Promise<boolean> {
    return false;
  }

  async createSession(id: string, input: CreateSessionInput): Promise<SessionRow> {
    return sessionRow(id, { source: input.source });
  }

  // ---- not used by the admission tests ----
  endSession(): Promise<void> { return notUsed("endSession"); }
  listSessions(): Promise<SessionSummary[]> { return notUsed("listSessions"); }
  ensureSessionForKey(): Promise<SessionRow> { return notUsed("ensureSessionForKey"); }
  appendMessage(): Promise<number> { return notUsed("appendMessage"); }
  getMessages(): Promise<MessageRow[]> { return notUsed("getMessages"); }
  inboxAttachments(): Promise<StoredAttachment[]> { return notUsed("inboxAttachments"); }
  getAttachment(): Promise<StoredAttachment | null> { return notUsed("getAttachment"); }
  pairingCodeFor(): Promise<{ code: string; fresh: boolean }> { return notUsed("pairingCodeFor"); }
  approvePairing(): Promise<null> { return notUsed("approvePairing"); }
  isPaired(): Promise<boolean> { return notUsed("isPaired"); }
  listPairings(): Promise<[]> { return notUsed("listPairings"); }
  revokePairing(): Promise<boolean> { return notUsed("revokePairing"); }
  usageTotals(): Promise<[]> { return notUsed("usageTotals"); }
  tryAcquireSessionTurnLease(): Promise<boolean> { return notUsed("tryAcquireSessionTurnLease"); }
  getSessionTurnLease(): Promise<null> { return notUsed("getSessionTurnLease"); }
  close(): Promise<void> { return Promise.resolve(); }
  recordInbound(): Promise<{ inserted: boolean; row: InboxRow }> { return notUsed("recordInbound"); }
  recordInboundBatch(): Promise<Array<{ inserted: boolean; row: InboxRow }>> { return notUsed("recordInboundBatch"); }
  recordRejected(): Promise<InboxRow> { return notUsed("recordRejected"); }
  getInboxRow(): Promise<InboxRow | null> { return notUsed("getInboxRow"); }
  findInboxRow(): Promise<InboxRow | null> { return notUsed("findInboxRow"); }
  markInboxEnqueued(): Promise<void> { return notUsed("markInboxEnqueued"); }
  pendingInbox(): Promise<InboxRow[]> { return notUsed("pendingInbox"); }
  wakeUpView(): Promise<WakeUpView> { return notUsed("wakeUpView"); }
  releaseSessionTurnLeaseAndReadHead(): Promise<InboxRow | null> { return notUsed("releaseSessionTurnLeaseAndReadHead"); }
  listPendingInbox(): Promise<InboxRow[]> { return notUsed("listPendingInbox"); }
  unclaimedPendingHeads(): Promise<Array<{ conversationId: string; inboxId: number }>> { return notUsed("unclaimedPendingHeads"); }
  sessionTurnLeasesOfThisProcess(): Promise<Array<{ conversationId: string; holder: string }>> { return notUsed("sessionTurnLeasesOfThisProcess"); }
  completeInbox(): Promise<void> { return notUsed("completeInbox"); }
  inboxCounts(): Promise<Record<InboxStatus, number>> { return notUsed("inboxCounts"); }
  createDeliveries(): Promise<number[]> { return notUsed("createDeliveries"); }
  getDelivery(): Promise<DeliveryRow | null> { return notUsed("getDelivery"); }
  claimDelivery(): Promise<DeliveryRow | null> { return notUsed("claimDelivery"); }
  markDeliverySent(): Promise<void> { return notUsed("markDeliverySent"); }
  markDeliveryFailed(): Promise<void> { return notUsed("markDeliveryFailed"); }
  setDeliveryEditTarget(): Promise<boolean> { return notUsed("setDeliveryEditTarget"); }
  liveSessionTurnLeaseHolder(): Promise<string | null> { return notUsed("liveSessionTurnLeaseHolder"); }
  sessionKeysWithPrefix(): Promise<string[]> { return notUsed("sessionKeysWithPrefix"); }
  onSessionTurnLeaseReleased(): () => void { return notUsed("onSessionTurnLeaseReleased"); }
  staleSessionTurnLeases(): Promise<StaleLease[]> { return notUsed("staleSessionTurnLeases"); }
  reapSessionTurnLease(): Promise<boolean> { return notUsed("reapSessionTurnLease"); }
  listUnsentDeliveries(): Promise<DeliveryRow[]> { return notUsed("listUnsentDeliveries"); }
  deliveriesForSession(): Promise<DeliveryRow[]> { return notUsed("deliveriesForSession"); }
  recordDeliveryReceipt(): Promise<DeliveryRow | null> { return notUsed("recordDeliveryReceipt"); }
}
