// Webhook routes: `webhooks: {<route>: {secret, style: github | standard, reply: sync | callback, callback_url}}`.
import { z } from "zod";

export const WEBHOOK_ROUTE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const WebhookRouteSchema = z
  .object({
    secret: z.string().min(1, "secret must not be empty"),
    style: z.enum(["github", "standard"]),
    reply: z.enum(["sync", "callback"]),
    callback_url: z.url({ protocol: /^https?$/ }).optional(),
    /** How long a sync route waits for the reply before answering 504. */
    sync_timeout_ms: z.number().int().positive().optional(),
  })
  .refine((route) => route.reply !== "callback" || route.callback_url !== undefined, {
    message: "callback_url is required when reply is callback",
    path: ["callback_url"],
  });

export type WebhookRouteConfig = z.infer<typeof WebhookRouteSchema>;
export type WebhookRoutes = Record<string, WebhookRouteConfig>;

/** Validates routes from config; the error names the bad key, e.g. `webhooks.github.style`. */
export function parseWebhookRoutes(input: unknown): WebhookRoutes {
  const parsed = z
    .record(z.string().regex(WEBHOOK_ROUTE_NAME, "route names are letters, digits, _ and -"), WebhookRouteSchema)
    .safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = ["webhooks", ...(issue?.path ?? []).map(String)].join(".");
  throw new Error(`invalid config ${path}: ${issue?.message ?? "invalid"}`);
}
