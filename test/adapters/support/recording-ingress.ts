// An in-test GatewayIngress: records every accept(), answers duplicate for a repeated
// (platform, platformMessageId), and resolves waitForOutcome with a scripted reply.
import type {
  AcceptResult,
  DeliveryReceipt,
  GatewayIngress,
  InboundMessage,
  TurnOutcome,
} from "../../../src/gateway/types.js";

export interface RecordedAccept {
  message: InboundMessage;
  result: AcceptResult;
}

export class RecordingIngress implements GatewayIngress {
  readonly calls: RecordedAccept[] = [];
  readonly interrupts: Array<{ sessionId: string; options: { text?: string; hard?: boolean } }> = [];
  readonly rejected: Array<{ message: InboundMessage; reason: string }> = [];
  readonly receipts: Array<{ platform: string; platformMessageId: string; receipt: DeliveryReceipt }> = [];
  /** Message ids of sent replies recordDeliveryReceipt finds (others answer false). */
  readonly sentReplyIds = new Set<string>();
  /** The reply a turn produces; `null` makes waitForOutcome never resolve (it times out). */
  reply: ((message: InboundMessage) => string) | null = (message) => `echo: ${message.text}`;
  /** When set, accept() throws this error (the durable write failed). */
  failWith: Error | null = null;
  private readonly rows = new Map<string, { inboxId: number; sessionId: string; message: InboundMessage }>();
  private readonly byInbox = new Map<number, { sessionId: string; message: InboundMessage }>();
  private nextInbox = 1;

  /** Messages that were accepted (not duplicates), in order. */
  get accepted(): InboundMessage[] {
    return this.calls.filter((c) => c.result.status === "accepted").map((c) => c.message);
  }

  get duplicates(): InboundMessage[] {
    return this.calls.filter((c) => c.result.status === "duplicate").map((c) => c.message);
  }

  async accept(message: InboundMessage): Promise<AcceptResult> {
    if (this.failWith) throw this.failWith;
    const key = `${message.platform}\u0000${message.platformMessageId}`;
    const existing = this.rows.get(key);
    let result: AcceptResult;
    if (existing) {
      result = { status: "duplicate", inboxId: existing.inboxId, sessionId: existing.sessionId };
    } else {
      const inboxId = this.nextInbox++;
      const sessionId = message.sessionId ?? `sess-${message.sessionKey}`;
      this.rows.set(key, { inboxId, sessionId, message });
      this.byInbox.set(inboxId, { sessionId, message });
      result = { status: "accepted", inboxId, sessionId, enqueued: true };
    }
    this.calls.push({ message, result });
    return result;
  }

  async waitForOutcome(inboxId: number, timeoutMs: number): Promise<TurnOutcome> {
    const row = this.byInbox.get(inboxId);
    if (!row) throw new Error(`unknown inbox row ${inboxId}`);
    const reply = this.reply;
    if (reply === null) {
      await new Promise((resolve) => setTimeout(resolve, timeoutMs));
      throw new Error(`timed out after ${timeoutMs} ms waiting for inbox row ${inboxId}`);
    }
    return { inboxId, sessionId: row.sessionId, status: "done", reply: reply(row.message), receivedAt: Date.now() / 1000 };
  }

  async interrupt(sessionId: string, options: { text?: string; hard?: boolean }): Promise<void> {
    this.interrupts.push({ sessionId, options });
  }

  async recordRejected(message: InboundMessage, reason: string): Promise<AcceptResult> {
    if (this.failWith) throw this.failWith;
    this.rejected.push({ message, reason });
    return { status: "rejected", reason };
  }

  async recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<boolean> {
    if (this.failWith) throw this.failWith;
    this.receipts.push({ platform, platformMessageId, receipt });
    return this.sentReplyIds.has(platformMessageId);
  }
}
