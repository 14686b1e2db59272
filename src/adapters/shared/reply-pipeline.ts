// How a chat platform's reply goes out, configured by each adapter instead of written again:
// a reply from the deliveries ledger is held back while the platform's Retry-After window for its
// destination is open (gate), marked when it may repeat an earlier attempt, split to the
// platform's limit, sent part by part (a retry after a 429 half way resumes with the first unsent
// part), and its thread remembered so that plain replies there are answered. A streamed preview
// (the message the reply is streamed into) goes through the same gate and thread memory.
import type { OutboundReply, SendResult } from "../../gateway/types.js";
import { markPossibleDuplicate } from "./duplicate-marker.js";
import { PartialSendTracker, sendParts, type PartOperations } from "./multipart-send.js";
import { RetryAfterGate } from "./retry-after-gate.js";
import { splitMessage } from "./split-message.js";
import { optionalString } from "./target.js";

/** What is sent for a reply with no text: platforms refuse empty messages. */
const EMPTY_REPLY = "(empty reply)";

export interface ReplyPipelineOptions {
  /** The platform's name in errors ("Slack" -> "Slack reply held back: ..."). */
  platform: string;
  /** The longest message the platform takes, in UTF-16 units; longer replies go as several. */
  splitLimit: number;
  /** The platform's Retry-After windows. */
  gate: RetryAfterGate;
  /** The gate's key for a reply target: the destination a 429 holds back (e.g. the channel). */
  gateKey(target: Record<string, unknown>): string;
  /** How this reply posts one part, and edits the streamed message into its first part. */
  parts(reply: OutboundReply): PartOperations;
  /** How a resend that may repeat an earlier reply shows it; default: an italic note at the end. */
  markPossibleDuplicate?(text: string): string;
  /** Remember the target's thread once something was posted there; absent: the platform has no threads. */
  rememberThread?(target: Record<string, unknown>): void;
}

export class ReplyPipeline {
  private readonly tracker = new PartialSendTracker();

  constructor(private readonly options: ReplyPipelineOptions) {}

  /** Sends a reply from the deliveries ledger; returns the id of its first message. */
  async send(reply: OutboundReply): Promise<SendResult> {
    const { options } = this;
    options.gate.check(options.gateKey(reply.target), `${options.platform} reply`);
    const editId = optionalString(reply.target, "edit_message_id");
    // An edit replaces text in place, so repeating it cannot duplicate anything.
    const marked = editId === null && reply.possibleDuplicate;
    const text = marked ? (options.markPossibleDuplicate ?? markPossibleDuplicate)(reply.text) : reply.text;
    const parts = splitMessage(text.trim() === "" ? EMPTY_REPLY : text, options.splitLimit);
    const id = await sendParts({ deliveryId: reply.deliveryId, parts, editMessageId: editId }, options.parts(reply), this.tracker);
    options.rememberThread?.(reply.target);
    return { platformMessageId: id };
  }

  /** Posts a streamed preview; a 429 it meets holds back its destination. */
  async postPreview(target: Record<string, unknown>, post: () => Promise<string>): Promise<string> {
    const key = this.options.gateKey(target);
    this.options.gate.check(key, `${this.options.platform} preview`);
    const id = await this.options.gate.track(key, post);
    this.options.rememberThread?.(target);
    return id;
  }

  /** Edits a streamed preview; a 429 it meets holds back its destination. */
  async editPreview(target: Record<string, unknown>, edit: () => Promise<unknown>): Promise<void> {
    const key = this.options.gateKey(target);
    this.options.gate.check(key, `${this.options.platform} preview edit`);
    await this.options.gate.track(key, edit);
  }
}
