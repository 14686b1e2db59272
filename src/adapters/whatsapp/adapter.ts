// The WhatsApp adapter (Cloud API): signed webhooks in, replies through the Graph API.
//
// Sessions: one per person per business number, `whatsapp:<phone_number_id>:<from>`.
// Replies: the final text only (WhatsApp has no bot message edits, so no streaming), split at
// 4,096 characters, the first part quoting the person's message. A resend that may repeat an
// earlier reply ends with POSSIBLE_DUPLICATE_NOTE. Typing: when a turn starts, the person's
// message is marked read (blue ticks) — the Cloud API's sign that someone is on it.
import type { Logger } from "pino";
import { PermanentSendError, type GatewayIngress, type OutboundReply, type PlatformAdapter, type SendResult } from "../../gateway/types.js";
import { PartialSendTracker, sendParts } from "../shared/multipart-send.js";
import type { RateLimitGates } from "../shared/retry-after-gate.js";
import { optionalString } from "../shared/target.js";
import type { WhatsAppConfig } from "./config.js";
import { WhatsAppGraph } from "./graph.js";
import { fetchWhatsAppMedia } from "./media.js";
import { createWhatsAppIntake } from "./intake.js";
import { WHATSAPP_WEBHOOK_PATH, whatsappRoutes } from "./routes.js";
import { WHATSAPP_SIGNATURE_HEADER } from "./signature.js";
import { headerValue } from "../shared/headers.js";
import { headerRule } from "../shared/request-rules.js";
import { postPart, readReplyTarget, replyParts, WhatsAppSendGate } from "./send.js";

export interface WhatsAppAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Rate-limit windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  fetch?: typeof fetch;
  now?: () => number;
}

export function createWhatsAppAdapter(config: WhatsAppConfig, deps: WhatsAppAdapterDeps): PlatformAdapter {
  const logger = deps.logger.child({ adapter: "whatsapp" });
  const now = deps.now ?? Date.now;
  const graph = new WhatsAppGraph(config.apiUrl, config.phoneNumberId, config.accessToken, deps.fetch ?? fetch);
  const gate = new WhatsAppSendGate(deps.rateLimits?.windows("whatsapp"));
  const tracker = new PartialSendTracker();

  return {
    platform: "whatsapp",
    capabilities: { threads: false, edits: false, streaming: false, typing: true },

    routes(ingress: GatewayIngress) {
      return whatsappRoutes({
        appSecret: config.appSecret,
        verifyToken: config.verifyToken,
        bodyLimitBytes: deps.bodyLimitBytes,
        logger,
        intake: createWhatsAppIntake(ingress, { phoneNumberId: config.phoneNumberId, logger, now }),
      });
    },

    // Meta may batch many changes in one delivery: the configured limit is its limit.
    requestRules: () => [
      headerRule(WHATSAPP_WEBHOOK_PATH, deps.bodyLimitBytes, "invalid_signature", (headers) =>
        headerValue(headers, WHATSAPP_SIGNATURE_HEADER) ? null : "missing X-Hub-Signature-256 header",
      ),
    ],

    async send(reply: OutboundReply): Promise<SendResult> {
      const target = readReplyTarget(reply.target);
      gate.check(target);
      const id = await sendParts(
        { deliveryId: reply.deliveryId, parts: replyParts(reply), editMessageId: null },
        {
          post: (text, index) => gate.track(target, () => postPart(graph, target, text, index)),
          edit: () => Promise.reject(new PermanentSendError("WhatsApp messages cannot be edited")),
        },
        tracker,
      );
      return { platformMessageId: id };
    },

    async typing(target) {
      const messageId = optionalString(target, "message_id");
      if (messageId) await graph.markRead(messageId);
    },

    fetchMedia(ref, limits) {
      return fetchWhatsAppMedia(ref, limits, { accessToken: config.accessToken, apiUrl: config.apiUrl, fetch: deps.fetch });
    },
  };
}
