// DeliveryStore: the outbound ledger the delivery worker sends from.
import type { ClaimDeliveryOptions, DeliveryInsert, DeliveryReceipt, DeliveryRow } from "../types.js";

/** Outbound ledger: every reply is a row before it is sent. */
export interface DeliveryStore {
  createDeliveries(inserts: DeliveryInsert[]): Promise<number[]>;
  getDelivery(id: number): Promise<DeliveryRow | null>;
  /**
   * Claim a delivery for one send attempt: pending -> sending, attempts+1. A row found already
   * 'sending' (a crash between send and record) is claimed with possible_duplicate=true, but only
   * once that claim is `reclaimAfterSeconds` old (default 0): a younger one may be a live send.
   * Returns null when the row is already sent or failed, or its claim is younger.
   */
  claimDelivery(id: number, options?: ClaimDeliveryOptions): Promise<DeliveryRow | null>;
  markDeliverySent(id: number, platformMessageId: string | null): Promise<void>;
  /** final=false puts the row back to pending for a retry. */
  markDeliveryFailed(id: number, error: string, final: boolean): Promise<void>;
  /**
   * A reply whose text was streamed into a posted message is delivered as an edit of it: sets
   * `target.edit_message_id`. Only before the first send attempt; false otherwise.
   */
  setDeliveryEditTarget(id: number, editMessageId: string): Promise<boolean>;
  listUnsentDeliveries(limit?: number): Promise<DeliveryRow[]>;
  deliveriesForSession(sessionId: string): Promise<DeliveryRow[]>;
  /**
   * A platform's report on a sent reply, found by (platform, the message id its send returned),
   * merged into the row's display_metadata as `{receipt, receipts: {<status>: at}, receipt_errors}`.
   * `receipt` never moves back (a late `delivered` after `read` keeps `read`); a repeated report
   * keeps the first time. Null when no delivery has that id.
   */
  recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<DeliveryRow | null>;
}
