// The signed-webhook adapter: POST /webhooks/:route, replies in the HTTP answer (sync routes) or
// as signed callbacks (callback routes).
import type { Logger } from "pino";
import type { GatewayIngress, OutboundReply, PlatformAdapter, SendResult } from "../../gateway/types.js";
import { postCallback } from "./callback.js";
import { parseWebhookRoutes, type WebhookRoutes } from "./config.js";
import { DEFAULT_SYNC_TIMEOUT_MS, webhookRoutes } from "./routes.js";

export interface WebhookAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Default wait for a sync route's reply (a route's sync_timeout_ms wins). */
  syncTimeoutMs?: number;
  callbackTimeoutMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

export function createWebhookAdapter(routesConfig: WebhookRoutes, deps: WebhookAdapterDeps): PlatformAdapter {
  const routes = parseWebhookRoutes(routesConfig);
  const logger = deps.logger.child({ adapter: "webhook" });
  const now = deps.now ?? Date.now;
  return {
    platform: "webhook",
    capabilities: { threads: false, edits: false, streaming: false, typing: false },

    routes(ingress: GatewayIngress) {
      return webhookRoutes(ingress, {
        routes,
        bodyLimitBytes: deps.bodyLimitBytes,
        logger,
        now,
        syncTimeoutMs: deps.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS,
      });
    },

    async send(reply: OutboundReply): Promise<SendResult> {
      const id = await postCallback(routes, reply, {
        fetch: deps.fetch ?? fetch,
        now,
        timeoutMs: deps.callbackTimeoutMs ?? 10_000,
      });
      return { platformMessageId: id };
    },
  };
}
