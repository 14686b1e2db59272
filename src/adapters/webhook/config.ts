// Webhook routes and their config section (YAML only):
// `webhooks: {<route>: {secret, style: github | standard, reply: sync | callback, callback_url?, sync_timeout_ms?}}`.
import { z } from "zod";
import { MIN_SECRET_CHARS, type ConfigSection } from "../../shared/config-section.js";

export const WEBHOOK_ROUTE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The least a sync route may wait for its reply. */
const MIN_SYNC_TIMEOUT_MS = 100;

export const WebhookRouteSchema = z
  .object({
    secret: z.string().min(1, "secret must not be empty").min(MIN_SECRET_CHARS, `secret must be at least ${MIN_SECRET_CHARS} characters`),
    // Defaults as documented since the first release, so existing files keep loading.
    style: z.enum(["github", "standard"]).default("github"),
    reply: z.enum(["sync", "callback"]).default("sync"),
    callback_url: z.url({ protocol: /^https?$/ }).optional(),
    /** How long a sync route waits for the reply before answering 504. */
    sync_timeout_ms: z.number().int().min(MIN_SYNC_TIMEOUT_MS).optional(),
  })
  .refine((route) => route.reply !== "callback" || route.callback_url !== undefined, {
    message: "callback_url is required when reply is 'callback'",
    path: ["callback_url"],
    // Named beside any other fault of the route, not only once the rest is valid.
    when: ({ value }) => isRecord(value) && value.reply === "callback" && value.callback_url === undefined,
  });

export type WebhookRouteConfig = z.infer<typeof WebhookRouteSchema>;
export type WebhookRoutes = Record<string, WebhookRouteConfig>;

/** Routes by name; a name is 1 to 64 letters, digits, '-' and '_' (it is a URL path segment). */
const WebhookRoutesSchema = z.record(z.string().regex(WEBHOOK_ROUTE_NAME), WebhookRouteSchema);

/** YAML `webhooks:` (no environment variables); no routes: the webhook adapter is off. */
export const webhookConfigSection: ConfigSection<typeof WebhookRoutesSchema, WebhookRoutes> = {
  schema: WebhookRoutesSchema,
  load: (_env, file) => file ?? {},
};

/** Validates routes given in code; the error names the bad key, e.g. `webhooks.github.style`. */
export function parseWebhookRoutes(input: unknown): WebhookRoutes {
  const parsed = WebhookRoutesSchema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = ["webhooks", ...(issue?.path ?? []).map(String)].join(".");
  throw new Error(`invalid config ${path}: ${issue?.message ?? "invalid"}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
