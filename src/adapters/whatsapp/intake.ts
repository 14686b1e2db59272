// A verified webhook's content, recorded through the gateway in the order it came: each message
// accepted (or rejected with its reason), each status of one of our replies written to its
// ledger row. Throws as soon as something cannot be recorded: the route then answers 503, Meta
// delivers the whole body again, and what was already recorded comes back as duplicates.
import type { Logger } from "pino";
import { DELIVERY_RECEIPT_STATUSES, type DeliveryReceiptStatus, type GatewayIngress } from "../../gateway/types.js";
import { classifyWhatsAppMessage } from "./messages.js";
import type { ParsedWebhook, WhatsAppStatus, WhatsAppValue } from "./payload.js";

export interface WhatsAppIntakeContext {
  /** The configured business number: changes about another number are not ours. */
  phoneNumberId: string;
  logger: Logger;
  now: () => number;
}

/** What one webhook body came to (the route answers with it). */
export interface WhatsAppIntakeSummary {
  accepted: number;
  duplicates: number;
  rejected: number;
  ignored: number;
  /** Statuses written to a reply's ledger row. */
  statuses: number;
  /** Statuses of messages the ledger does not know (sent by something else, or a later part of a split reply). */
  unknownStatuses: number;
}

export type WhatsAppIntake = (webhook: ParsedWebhook) => Promise<WhatsAppIntakeSummary>;

export function createWhatsAppIntake(ingress: GatewayIngress, ctx: WhatsAppIntakeContext): WhatsAppIntake {
  const log = ctx.logger;

  const messages = async (value: WhatsAppValue, phoneNumberId: string, summary: WhatsAppIntakeSummary): Promise<void> => {
    for (const message of value.messages ?? []) {
      const contact = value.contacts?.find((c) => c.wa_id === message.from) ?? value.contacts?.[0];
      const decision = classifyWhatsAppMessage(message, {
        phoneNumberId,
        displayPhoneNumber: value.metadata?.display_phone_number ?? null,
        profileName: contact?.profile?.name ?? null,
        now: ctx.now(),
      });
      if (decision.kind === "ignore") {
        summary.ignored++;
        log.debug({ wamid: message.id, type: message.type, reason: decision.reason }, "whatsapp message ignored");
        continue;
      }
      if (decision.kind === "reject") {
        await ingress.recordRejected(decision.message, decision.reason);
        summary.rejected++;
        continue;
      }
      const result = await ingress.accept(decision.message);
      if (result.status === "accepted") summary.accepted++;
      else if (result.status === "duplicate") summary.duplicates++;
      else {
        summary.rejected++;
        log.warn({ wamid: message.id, reason: result.reason }, "whatsapp message rejected by the gateway");
      }
    }
  };

  const statuses = async (value: WhatsAppValue, summary: WhatsAppIntakeSummary): Promise<void> => {
    for (const status of value.statuses ?? []) {
      const receiptStatus = knownStatus(status);
      if (receiptStatus === null) {
        summary.ignored++;
        log.debug({ wamid: status.id, status: status.status }, "whatsapp status not tracked");
        continue;
      }
      const at = status.timestamp !== undefined && Number.isFinite(status.timestamp) ? status.timestamp : ctx.now() / 1000;
      const errors = status.errors?.map((e) => ({ ...e }));
      const found = await ingress.recordDeliveryReceipt("whatsapp", status.id, { status: receiptStatus, at, ...(errors?.length ? { errors } : {}) });
      if (found) summary.statuses++;
      else {
        summary.unknownStatuses++;
        log.debug({ wamid: status.id, status: receiptStatus }, "whatsapp status for a message the ledger does not know");
      }
      if (receiptStatus === "failed") log.warn({ wamid: status.id, errors }, "whatsapp reports a reply as failed");
    }
  };

  return async (webhook) => {
    const summary: WhatsAppIntakeSummary = { accepted: 0, duplicates: 0, rejected: 0, ignored: 0, statuses: 0, unknownStatuses: 0 };
    for (const value of webhook.values) {
      const phoneNumberId = value.metadata?.phone_number_id ?? ctx.phoneNumberId;
      if (phoneNumberId !== ctx.phoneNumberId) {
        // Another number of the same app: its replies could not come from ours.
        summary.ignored += (value.messages?.length ?? 0) + (value.statuses?.length ?? 0);
        log.warn({ phoneNumberId }, "whatsapp webhook for another phone number id; ignored");
        continue;
      }
      if (value.errors?.length) log.warn({ errors: value.errors }, "whatsapp webhook reports errors");
      await messages(value, phoneNumberId, summary);
      await statuses(value, summary);
    }
    return summary;
  };
}

function knownStatus(status: WhatsAppStatus): DeliveryReceiptStatus | null {
  return (DELIVERY_RECEIPT_STATUSES as readonly string[]).includes(status.status) ? (status.status as DeliveryReceiptStatus) : null;
}
