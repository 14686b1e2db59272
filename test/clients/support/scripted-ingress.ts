// A stand-in for the gateway behind the API router, for request-level tests: it records what the
// router hands to ingress, and plays a scripted turn per message on a real event bus, the way a
// turn worker publishes it (turn.started / delta / turn.completed, each with inbox_ids).
import type { EventBus } from "../../../src/bus/event-bus.js";
import type { EventKind } from "../../../src/bus/types.js";
import type { AcceptResult, GatewayIngress, InboundMessage, TurnOutcome } from "../../../src/gateway/types.js";
import type { InboxRow } from "../../../src/state/types.js";

export interface TurnContext {
  inboxId: number;
  message: InboundMessage;
  sessionId: string;
  publish(kind: EventKind, data?: Record<string, unknown>): Promise<void>;
  finish(status: TurnOutcome["status"], reply: string | null): void;
}

export type ScriptedTurn = (turn: TurnContext) => Promise<void>;

interface Row {
  id: number;
  message: InboundMessage;
  sessionId: string;
  outcome: TurnOutcome | null;
  waiters: Array<(outcome: TurnOutcome) => void>;
}

export class ScriptedIngress implements GatewayIngress {
  readonly accepted: InboundMessage[] = [];
  readonly turnsRun: number[] = [];
  /** Run the turn before accept() returns (its events then precede the accept result). */
  runBeforeReturn = false;
  rejectReason: string | null = null;
  private readonly rows = new Map<number, Row>();
  private readonly byMessageId = new Map<string, Row>();
  private nextId = 1;
  readonly receivedAt = 1_700_000_123.5;

  constructor(
    private readonly bus: EventBus,
    public turn: ScriptedTurn,
  ) {}

  async accept(message: InboundMessage): Promise<AcceptResult> {
    this.accepted.push(message);
    if (this.rejectReason) return { status: "rejected", reason: this.rejectReason };
    const earlier = this.byMessageId.get(`${message.platform}/${message.platformMessageId}`);
    if (earlier) return { status: "duplicate", inboxId: earlier.id, sessionId: earlier.sessionId };
    const sessionId = message.sessionId ?? message.sessionKey;
    const row: Row = { id: this.nextId++, message, sessionId, outcome: null, waiters: [] };
    this.rows.set(row.id, row);
    this.byMessageId.set(`${message.platform}/${message.platformMessageId}`, row);
    const running = this.run(row);
    if (this.runBeforeReturn) await running;
    else running.catch(() => undefined);
    return { status: "accepted", inboxId: row.id, sessionId, enqueued: true };
  }

  async recordRejected(message: InboundMessage, reason: string): Promise<AcceptResult> {
    this.accepted.push(message);
    return { status: "rejected", reason };
  }

  /** No client protocol sends replies through the ledger. */
  async recordDeliveryReceipt(): Promise<boolean> {
    return false;
  }

  async waitForOutcome(inboxId: number, timeoutMs: number): Promise<TurnOutcome> {
    const row = this.rows.get(inboxId);
    if (!row) throw new Error(`unknown inbox row ${inboxId}`);
    if (row.outcome) return row.outcome;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new Error(`no reply for inbox row ${inboxId} within ${timeoutMs} ms; it is still queued`);
        error.name = "OutcomeTimeoutError";
        reject(error);
      }, timeoutMs);
      row.waiters.push((outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
    });
  }

  async interrupt(): Promise<void> {}

  /** The store calls the router makes. */
  storeView() {
    return {
      conversationIdOf: async (id: string) => id,
      getInboxRow: async (id: number) => (this.rows.has(id) ? ({ received_at: this.receivedAt } as InboxRow) : null),
      findInboxRow: async (platform: string, platformMessageId: string) => {
        const row = this.byMessageId.get(`${platform}/${platformMessageId}`);
        return row ? ({ id: row.id, session_id: row.sessionId } as InboxRow) : null;
      },
    };
  }

  private async run(row: Row): Promise<void> {
    this.turnsRun.push(row.id);
    await this.turn({
      inboxId: row.id,
      message: row.message,
      sessionId: row.sessionId,
      publish: async (kind, data = {}) => {
        await this.bus.publish(row.sessionId, kind, { inbox_ids: [row.id], ...data });
      },
      finish: (status, reply) => {
        row.outcome = { inboxId: row.id, sessionId: row.sessionId, status, reply, receivedAt: this.receivedAt };
        for (const waiter of row.waiters.splice(0)) waiter(row.outcome);
      },
    });
  }
}
