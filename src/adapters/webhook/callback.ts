// Delivers a callback route's reply: a signed JSON POST to the route's callback_url.
//
// Body: {reply, session_id, chat_id, user_id, in_reply_to, delivery_id, possible_duplicate}.
// The message id (webhook-id / X-GitHub-Delivery) is `dlv_<delivery id>`, the same on every
// resend, so a receiver can drop repeats; `possible_duplicate: true` marks a resend that may
// repeat one that already arrived.
import { PermanentSendError, RateLimitedError, type OutboundReply } from "../../gateway/types.js";
import { parseRetryAfter } from "../../agent/providers/retry-after.js";
import { optionalString, requiredString } from "../shared/target.js";
import type { WebhookRoutes } from "./config.js";
import { signWebhook } from "./signing.js";

export function callbackMessageId(deliveryId: number): string {
  return `dlv_${deliveryId}`;
}

export async function postCallback(
  routes: WebhookRoutes,
  reply: OutboundReply,
  options: { fetch: typeof fetch; now: () => number; timeoutMs: number },
): Promise<string> {
  const routeName = requiredString(reply.target, "route", "webhook");
  const route = Object.hasOwn(routes, routeName) ? routes[routeName] : undefined;
  if (!route) throw new PermanentSendError(`webhook route '${routeName}' is no longer configured`);
  if (!route.callback_url) throw new PermanentSendError(`webhook route '${routeName}' has no callback_url`);
  const id = callbackMessageId(reply.deliveryId);
  const body = JSON.stringify({
    reply: reply.text,
    session_id: reply.sessionId,
    chat_id: optionalString(reply.target, "chat_id"),
    user_id: optionalString(reply.target, "user_id"),
    in_reply_to: optionalString(reply.target, "in_reply_to"),
    delivery_id: reply.deliveryId,
    possible_duplicate: reply.possibleDuplicate,
  });
  const headers = {
    "Content-Type": "application/json",
    "User-Agent": "switchboard-webhook",
    ...signWebhook(route.style, route.secret, body, { id, nowMs: options.now() }),
  };
  let response: Response;
  try {
    response = await options.fetch(route.callback_url, {
      method: "POST",
      headers,
      body,
      redirect: "error",
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`webhook callback for '${routeName}' failed: ${reason}`, { cause: error });
  }
  await response.arrayBuffer().catch(() => undefined);
  if (response.ok) return id;
  const label = `webhook callback for '${routeName}' answered HTTP ${response.status}`;
  if (response.status === 429) {
    throw new RateLimitedError(parseRetryAfter(response.headers.get("retry-after")) ?? 1000, label);
  }
  if (response.status >= 400 && response.status < 500 && response.status !== 408) {
    throw new PermanentSendError(label);
  }
  throw new Error(label);
}
