// Delivers a callback route's reply: a signed JSON POST to the route's callback_url.
//
// Body: {reply, session_id, chat_id, user_id, in_reply_to, delivery_id, possible_duplicate}.
// The message id (webhook-id / X-GitHub-Delivery) is `dlv_<delivery id>`, the same on every
// resend, so a receiver can drop repeats; `possible_duplicate: true` marks a resend that may
// repeat one that already arrived.
//
// The POST goes through undici's `request` over a keep-alive pool (as Slack's calls do,
// slack/buffered-fetch.ts): the WHATWG fetch built streams, an abort signal with its timer and a
// Response around every callback, which under load was the largest part of what a turn allocated
// on a callback route. The pool's connect, headers and body timeouts bound each call, and no
// redirect is followed: a 3xx is an answer like any other that is not 2xx.
import { request } from "undici";
import { PermanentSendError, RateLimitedError, type OutboundReply } from "../../gateway/types.js";
import { parseRetryAfter } from "../../shared/retry-after.js";
import { boundedPool } from "../shared/bounded-pool.js";
import { optionalString, requiredString } from "../shared/target.js";
import type { WebhookRoutes } from "./config.js";
import { signWebhook } from "./signing.js";

export function callbackMessageId(deliveryId: number): string {
  return `dlv_${deliveryId}`;
}

/** What a callback's receiver answered: its status, and its Retry-After header if any. */
export interface CallbackAnswer {
  status: number;
  retryAfter: string | null;
}

/** Sends one callback POST; throws when no answer came (a refused connection, a time limit). */
export type CallbackPost = (url: string, headers: Record<string, string>, body: string) => Promise<CallbackAnswer>;

/** Keep-alive connections per callback origin: enough for the workers' concurrent deliveries. */
const CONNECTIONS_PER_ORIGIN = 32;
/** The size of an answer's body read before the connection is given up rather than kept. */
const ANSWER_BODY_LIMIT_BYTES = 64 * 1024;

/** A CallbackPost over a keep-alive pool of its own, each call bounded by `timeoutMs` per phase (connect, headers, body). */
export function createCallbackPost(timeoutMs: number): CallbackPost {
  const pool = boundedPool(CONNECTIONS_PER_ORIGIN, timeoutMs);
  return async (url, headers, body) => {
    const answer = await request(url, { method: "POST", headers, body, dispatcher: pool });
    // Nothing in the body is used; reading it lets the connection serve the next callback.
    await answer.body.dump({ limit: ANSWER_BODY_LIMIT_BYTES }).catch(() => undefined);
    const retryAfter = answer.headers["retry-after"];
    return { status: answer.statusCode, retryAfter: typeof retryAfter === "string" ? retryAfter : null };
  };
}

export async function postCallback(routes: WebhookRoutes, reply: OutboundReply, options: { post: CallbackPost; now: () => number }): Promise<string> {
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
  let answer: CallbackAnswer;
  try {
    answer = await options.post(route.callback_url, headers, body);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`webhook callback for '${routeName}' failed: ${reason}`, { cause: error });
  }
  if (answer.status >= 200 && answer.status < 300) return id;
  const label = `webhook callback for '${routeName}' answered HTTP ${answer.status}`;
  if (answer.status === 429) {
    throw new RateLimitedError(parseRetryAfter(answer.retryAfter) ?? 1000, label);
  }
  if (answer.status >= 400 && answer.status < 500 && answer.status !== 408) {
    throw new PermanentSendError(label);
  }
  throw new Error(label);
}
