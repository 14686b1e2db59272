// The inbound webhook body: `{id?, chat_id, user_id, text}` (more fields are allowed and ignored).
import { z } from "zod";

const required = (field: string) => ({
  error: (issue: { input: unknown }) =>
    issue.input === undefined ? `${field} is required` : `${field} must be a non-empty string or a number`,
});

const IdLike = (field: string) =>
  z.union([z.string().min(1), z.number().finite()], required(field)).transform((value) => String(value));

export const WebhookBodySchema = z.looseObject({
  id: IdLike("id").optional(),
  chat_id: IdLike("chat_id"),
  user_id: IdLike("user_id"),
  text: z
    .string({ error: (issue) => (issue.input === undefined ? "text is required" : "text must be a string") })
    .refine((text) => text.trim() !== "", "text must not be empty"),
});

export type WebhookBody = z.infer<typeof WebhookBodySchema>;

export type ParsedBody = { ok: true; body: WebhookBody } | { ok: false; message: string };

export function parseWebhookBody(raw: Buffer): ParsedBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    return { ok: false, message: "body is not valid JSON" };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { ok: false, message: "body must be a JSON object" };
  }
  const parsed = WebhookBodySchema.safeParse(json);
  if (parsed.success) return { ok: true, body: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join(".") || "body";
  const message = issue?.message ?? "invalid";
  return { ok: false, message: message.startsWith(field) ? `invalid body: ${message}` : `invalid body: ${field}: ${message}` };
}
