// POST /webhooks/<route> as a plain function of the route name, the request headers and the raw
// body bytes: verify the signature in the route's style, record the message durably, then answer
// (202 for a callback route; a sync route waits for the turn's outcome and answers with the
// reply). No framework in it: the express route hands it what it read.
//
// Dedupe ids come from signed data only, so a captured delivery replayed under a new unsigned id
// is still a duplicate:
// - standard: `webhook-id` (part of the signed content; the timestamp window bounds replays);
// - github:   the signature covers the body alone and the style has no timestamp, so the id is
//   the body's `id`, else a SHA-256 of the exact body. `X-GitHub-Delivery` is not signed and is
//   not used: the same signed body under a new delivery id is the same message.
import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { plainError as error } from "../../gateway/http-errors.js";
import type { AcceptResult, GatewayIngress, InboundMessage, PlainAnswer, TurnOutcome } from "../../gateway/types.js";
import { headerValue } from "../shared/headers.js";
import { parseWebhookBody, type WebhookBody } from "./body.js";
import type { WebhookRouteConfig, WebhookRoutes } from "./config.js";
import { verifyWebhook } from "./signing.js";

export const DEFAULT_SYNC_TIMEOUT_MS = 30_000;

export interface WebhookAnswerContext {
  routes: WebhookRoutes;
  logger: Logger;
  now: () => number;
  syncTimeoutMs: number;
}

export type WebhookAnswer = (routeName: string, headers: IncomingHttpHeaders, body: Buffer) => Promise<PlainAnswer>;

/** The delivery's dedupe id, from what the signature covers (see the top of this file). */
function deliveryId(headers: IncomingHttpHeaders, route: WebhookRouteConfig, body: WebhookBody, raw: Buffer): string {
  if (route.style === "standard") return headerValue(headers, "webhook-id")?.trim() || body.id || signedBodyId(raw);
  return body.id ?? signedBodyId(raw);
}

/** A body without an id is identified by its bytes: sending it again is a duplicate. */
function signedBodyId(raw: Buffer): string {
  return `sha256:${createHash("sha256").update(raw).digest("hex")}`;
}

export function toInboundMessage(
  routeName: string,
  route: WebhookRouteConfig,
  id: string,
  body: WebhookBody,
  now: number,
): InboundMessage {
  return {
    platform: "webhook",
    // Scoped by route: two senders may use the same ids.
    platformMessageId: `${routeName}:${id}`,
    sessionKey: `webhook:${routeName}:${body.chat_id}`,
    chatId: body.chat_id,
    threadId: null,
    userId: body.user_id,
    text: body.text,
    displayKind: "webhook",
    displayMetadata: { route: routeName, delivery_id: id, chat_id: body.chat_id, user_id: body.user_id },
    receivedAt: now,
    // Sync replies travel in the HTTP answer; only callback routes need delivery.
    replyTarget:
      route.reply === "callback" ? { route: routeName, chat_id: body.chat_id, user_id: body.user_id, in_reply_to: id } : null,
  };
}

export function webhookAnswer(ingress: GatewayIngress, ctx: WebhookAnswerContext): WebhookAnswer {
  const log = ctx.logger;
  return async (routeName, headers, raw) => {
    const route = Object.hasOwn(ctx.routes, routeName) ? ctx.routes[routeName] : undefined;
    if (!route) return error("unknown_route", `unknown webhook route '${routeName}'`);
    const check = verifyWebhook(route.style, route.secret, (name) => headerValue(headers, name), raw, ctx.now());
    if (!check.ok) {
      log.warn({ route: routeName, reason: check.reason }, "webhook refused");
      return error("invalid_signature", check.reason);
    }
    const parsed = parseWebhookBody(raw);
    if (!parsed.ok) return error("invalid_body", parsed.message);
    const id = deliveryId(headers, route, parsed.body, raw);
    const message = toInboundMessage(routeName, route, id, parsed.body, ctx.now());
    let result: AcceptResult;
    try {
      result = await ingress.accept(message);
    } catch (err) {
      log.error({ err, route: routeName }, "webhook could not be recorded");
      return error("dependency_unavailable");
    }
    // The gateway refuses input it cannot take (empty, too long): a client error, not a conflict.
    if (result.status === "rejected") return error("message_rejected", `message rejected: ${result.reason}`);
    if (result.status === "duplicate") return { status: 200, json: { duplicate: true } };
    if (route.reply === "callback") return { status: 202, json: { accepted: true, session_id: result.sessionId } };
    const timeoutMs = route.sync_timeout_ms ?? ctx.syncTimeoutMs;
    let outcome: TurnOutcome;
    try {
      outcome = await ingress.waitForOutcome(result.inboxId, timeoutMs, result.sessionId, { recordedNow: true });
    } catch (err) {
      log.warn({ err, route: routeName, inboxId: result.inboxId }, "webhook sync reply timed out");
      return error("reply_timeout", `no reply within ${timeoutMs} ms; the message is still being processed`, {
        session_id: result.sessionId,
      });
    }
    if (outcome.status === "failed") return error("turn_failed", undefined, { session_id: outcome.sessionId });
    if (outcome.status === "rejected") return error("turn_rejected", undefined, { session_id: outcome.sessionId });
    const answer: Record<string, unknown> = { reply: outcome.reply ?? "", session_id: outcome.sessionId };
    if (outcome.status === "interrupted") answer.status = "interrupted";
    return { status: 200, json: answer };
  };
}
