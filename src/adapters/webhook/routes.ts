// POST /webhooks/:route — signed deliveries, deduplicated by an id the signature covers.
// A sync route answers with the reply; a callback route answers 202 and the reply is POSTed,
// signed, to the route's callback_url.
//
// Dedupe ids come from signed data only, so a captured delivery replayed under a new unsigned id
// is still a duplicate:
// - standard: `webhook-id` (part of the signed content; the timestamp window bounds replays);
// - github:   the signature covers the body alone and the style has no timestamp, so the id is
//   the body's `id`, else a SHA-256 of the exact body. `X-GitHub-Delivery` is not signed and is
//   not used: the same signed body under a new delivery id is the same message.
import { createHash } from "node:crypto";
import { Router, type Request } from "express";
import type { Logger } from "pino";
import type { AcceptResult, GatewayIngress, InboundMessage, TurnOutcome } from "../../gateway/types.js";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody } from "../shared/http.js";
import { parseWebhookBody, type WebhookBody } from "./body.js";
import type { WebhookRouteConfig, WebhookRoutes } from "./config.js";
import { verifyWebhook } from "./signing.js";

export const DEFAULT_SYNC_TIMEOUT_MS = 30_000;

export interface WebhookRouteContext {
  routes: WebhookRoutes;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
  syncTimeoutMs: number;
}

/** The delivery's dedupe id, from what the signature covers (see the top of this file). */
function deliveryId(req: Request, route: WebhookRouteConfig, body: WebhookBody, raw: Buffer): string {
  if (route.style === "standard") return req.get("webhook-id")?.trim() || body.id || signedBodyId(raw);
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

export function webhookRoutes(ingress: GatewayIngress, ctx: WebhookRouteContext): Router {
  const router = Router();
  const log = ctx.logger;

  postRoute(router, "/webhooks/:route", ctx, async (req, res) => {
    const routeName = String(req.params.route);
    const route = Object.hasOwn(ctx.routes, routeName) ? ctx.routes[routeName] : undefined;
    if (!route) {
      sendError(res, 404, "unknown_route", `unknown webhook route '${routeName}'`);
      return;
    }
    const raw = readRawBody(req);
    const check = verifyWebhook(route.style, route.secret, (name) => req.get(name), raw, ctx.now());
    if (!check.ok) {
      log.warn({ route: routeName, reason: check.reason }, "webhook refused");
      sendError(res, 401, "invalid_signature", check.reason);
      return;
    }
    const parsed = parseWebhookBody(raw);
    if (!parsed.ok) {
      sendError(res, 400, "invalid_body", parsed.message);
      return;
    }
    const id = deliveryId(req, route, parsed.body, raw);
    const message = toInboundMessage(routeName, route, id, parsed.body, ctx.now());
    let result: AcceptResult;
    try {
      result = await ingress.accept(message);
    } catch (error) {
      log.error({ err: error, route: routeName }, "webhook could not be recorded");
      sendError(res, 503, "dependency_unavailable", "message could not be recorded; retry later");
      return;
    }
    if (result.status === "rejected") {
      // The gateway refuses input it cannot take (empty, too long): a client error, not a conflict.
      sendError(res, 400, "message_rejected", `message rejected: ${result.reason}`);
      return;
    }
    if (result.status === "duplicate") {
      res.status(200).json({ duplicate: true });
      return;
    }
    if (route.reply === "callback") {
      res.status(202).json({ accepted: true, session_id: result.sessionId });
      return;
    }
    const timeoutMs = route.sync_timeout_ms ?? ctx.syncTimeoutMs;
    let outcome: TurnOutcome;
    try {
      outcome = await ingress.waitForOutcome(result.inboxId, timeoutMs);
    } catch (error) {
      log.warn({ err: error, route: routeName, inboxId: result.inboxId }, "webhook sync reply timed out");
      sendError(res, 504, "reply_timeout", `no reply within ${timeoutMs} ms; the message is still being processed`, {
        fields: { session_id: result.sessionId },
      });
      return;
    }
    if (outcome.status === "failed") {
      sendError(res, 502, "turn_failed", "the turn failed", { fields: { session_id: outcome.sessionId } });
      return;
    }
    if (outcome.status === "rejected") {
      sendError(res, 409, "turn_rejected", "the turn was rejected", { fields: { session_id: outcome.sessionId } });
      return;
    }
    const answer: Record<string, unknown> = { reply: outcome.reply ?? "", session_id: outcome.sessionId };
    if (outcome.status === "interrupted") answer.status = "interrupted";
    res.status(200).json(answer);
  });

  return router;
}
