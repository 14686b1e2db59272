// The signed-webhook adapter: POST /webhooks/:route, replies in the HTTP answer (sync routes) or
// as signed callbacks (callback routes).
import type { Logger } from "pino";
import type { GatewayIngress, OutboundReply, PlatformAdapter, SendResult } from "../../gateway/types.js";
import { DEFAULT_SYNC_TIMEOUT_MS, type WebhookAnswerContext } from "./answer.js";
import { createCallbackPost, postCallback } from "./callback.js";
import { parseWebhookRoutes, type WebhookRoutes } from "./config.js";
import { webhookRoutes } from "./routes.js";
import { webhookHeadersProblem } from "./signing.js";
import { headerValue } from "../shared/headers.js";
import { headerRule } from "../shared/request-rules.js";

const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;

export interface WebhookAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Default wait for a sync route's reply (a route's sync_timeout_ms wins). */
  syncTimeoutMs?: number;
  /** How long a callback may wait to connect, for its answer's headers, or between its body's parts (default 10 s). */
  callbackTimeoutMs?: number;
  now?: () => number;
}

export function createWebhookAdapter(routesConfig: WebhookRoutes, deps: WebhookAdapterDeps): PlatformAdapter {
  const routes = parseWebhookRoutes(routesConfig);
  const logger = deps.logger.child({ adapter: "webhook" });
  const now = deps.now ?? Date.now;
  const post = createCallbackPost(deps.callbackTimeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS);
  const answerContext: WebhookAnswerContext = { routes, logger, now, syncTimeoutMs: deps.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS };
  return {
    platform: "webhook",
    capabilities: { threads: false, edits: false, streaming: false, typing: false },

    routes(ingress: GatewayIngress) {
      return webhookRoutes(ingress, { ...answerContext, bodyLimitBytes: deps.bodyLimitBytes });
    },

    // Every configured route again, at its exact path, for the HTTP server to answer without
    // express. Sync routes too: their answer (after the wait for the turn) is as plain.
    // Senders are the operator's own: the configured limit is their limit.
    requestRules: () =>
      Object.entries(routes).map(([name, route]) =>
        headerRule(`/webhooks/${name}`, deps.bodyLimitBytes, "invalid_signature", (headers, nowMs) =>
          webhookHeadersProblem(route.style, (header) => headerValue(headers, header), nowMs),
        ),
      ),

    async send(reply: OutboundReply): Promise<SendResult> {
      const id = await postCallback(routes, reply, { post, now });
      return { platformMessageId: id };
    },
  };
}
