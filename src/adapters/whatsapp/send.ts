// A WhatsApp reply in three small steps, each usable on its own by a shared reply pipeline:
// gate (hold back while a rate-limit window is open), split (the text as messages of at most
// 4,096 characters), post one part (the first one quotes the person's message). No edits, no
// streaming: the final reply only.
import type { OutboundReply } from "../../gateway/types.js";
import { RateLimitWindows } from "../../bus/rate-limit-windows.js";
import { markPossibleDuplicate } from "../shared/duplicate-marker.js";
import { RetryAfterGate } from "../shared/retry-after-gate.js";
import { splitMessage } from "../shared/split-message.js";
import { optionalString, requiredString } from "../shared/target.js";
import { WhatsAppRateLimitedError, type WhatsAppGraph } from "./graph.js";

/** The Cloud API's limit on a text message's body. */
export const WHATSAPP_MAX_TEXT = 4096;

/** Where a reply goes, read from the reply target the inbound message carried. */
export interface WhatsAppReplyTarget {
  /** The person's WhatsApp id (the message's `from`). */
  to: string;
  /** The wamid being answered. */
  replyTo: string | null;
}

export function readReplyTarget(target: Record<string, unknown>): WhatsAppReplyTarget {
  return { to: requiredString(target, "to", "whatsapp"), replyTo: optionalString(target, "message_id") };
}

/** The reply's messages: marked when it may repeat an earlier one, split at the limit, never empty. */
export function replyParts(reply: Pick<OutboundReply, "text" | "possibleDuplicate">): string[] {
  const text = reply.possibleDuplicate ? markPossibleDuplicate(reply.text) : reply.text;
  const parts = splitMessage(text, WHATSAPP_MAX_TEXT);
  return parts.length > 0 ? parts : ["(empty reply)"];
}

/** Posts part `index` of a reply; only the first quotes the message it answers. */
export function postPart(graph: WhatsAppGraph, target: WhatsAppReplyTarget, text: string, index: number): Promise<string> {
  return graph.sendText({ to: target.to, body: text, replyTo: index === 0 ? target.replyTo : null });
}

/**
 * Rate-limit windows of the business number and of each (number, person) pair, shared by every
 * gateway process: a limit one delivery met holds back the next ones to the same place.
 */
export class WhatsAppSendGate {
  private readonly gate: RetryAfterGate;

  constructor(private readonly windows: RateLimitWindows = new RateLimitWindows()) {
    this.gate = new RetryAfterGate(windows);
  }

  /** Throws RateLimitedError with the time left while the number or this pair must wait. */
  check(target: WhatsAppReplyTarget): void {
    this.gate.check(NUMBER_KEY, "WhatsApp reply");
    this.gate.check(pairKey(target), "WhatsApp reply");
  }

  /** Runs `send`; a rate limit it meets opens the window of the limit's scope. */
  async track<T>(target: WhatsAppReplyTarget, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof WhatsAppRateLimitedError) this.windows.open(error.scope === "pair" ? pairKey(target) : NUMBER_KEY, error.retryAfterMs);
      throw error;
    }
  }
}

const NUMBER_KEY = "number";

function pairKey(target: WhatsAppReplyTarget): string {
  return `pair:${target.to}`;
}
