// The Cloud API webhook body: `{object, entry: [{id, changes: [{field, value}]}]}`. Changes of the
// `messages` field carry `value.messages[]` (what people wrote) and `value.statuses[]` (what
// happened to our replies). The whole body is checked before anything is recorded, so a
// malformed one is refused as a whole and a good one is recorded message by message, in order.
import { z } from "zod";

const Timestamp = z.union([z.string(), z.number()]).transform((value) => Number(value));

const MediaSchema = z.looseObject({
  id: z.string(),
  mime_type: z.string().optional(),
  sha256: z.string().optional(),
  caption: z.string().optional(),
  filename: z.string().optional(),
});

const ErrorSchema = z.looseObject({
  code: z.number().optional(),
  title: z.string().optional(),
  message: z.string().optional(),
});

export const WhatsAppMessageSchema = z.looseObject({
  from: z.string().min(1),
  /** The wamid: unique per message, the same on every redelivery. */
  id: z.string().min(1),
  timestamp: Timestamp.optional(),
  type: z.string().min(1),
  text: z.looseObject({ body: z.string() }).optional(),
  image: MediaSchema.optional(),
  video: MediaSchema.optional(),
  document: MediaSchema.optional(),
  audio: MediaSchema.optional(),
  sticker: MediaSchema.optional(),
  /** A quick-reply button of a template message. */
  button: z.looseObject({ text: z.string().optional(), payload: z.string().optional() }).optional(),
  interactive: z
    .looseObject({
      type: z.string(),
      button_reply: z.looseObject({ id: z.string().optional(), title: z.string().optional() }).optional(),
      list_reply: z.looseObject({ id: z.string().optional(), title: z.string().optional() }).optional(),
    })
    .optional(),
  /** Set when the person replied to (quoted) an earlier message. */
  context: z.looseObject({ from: z.string().optional(), id: z.string().optional() }).optional(),
  errors: z.array(ErrorSchema).optional(),
});
export type WhatsAppMessage = z.infer<typeof WhatsAppMessageSchema>;

export const WhatsAppStatusSchema = z.looseObject({
  /** The wamid our send returned. */
  id: z.string().min(1),
  status: z.string().min(1),
  timestamp: Timestamp.optional(),
  recipient_id: z.string().optional(),
  errors: z.array(ErrorSchema).optional(),
});
export type WhatsAppStatus = z.infer<typeof WhatsAppStatusSchema>;

export const WhatsAppValueSchema = z.looseObject({
  messaging_product: z.string().optional(),
  metadata: z.looseObject({ phone_number_id: z.string(), display_phone_number: z.string().optional() }).optional(),
  contacts: z
    .array(z.looseObject({ wa_id: z.string().optional(), profile: z.looseObject({ name: z.string().optional() }).optional() }))
    .optional(),
  messages: z.array(WhatsAppMessageSchema).optional(),
  statuses: z.array(WhatsAppStatusSchema).optional(),
  errors: z.array(ErrorSchema).optional(),
});
export type WhatsAppValue = z.infer<typeof WhatsAppValueSchema>;

const WebhookSchema = z.looseObject({
  object: z.string(),
  entry: z.array(z.looseObject({ id: z.string().optional(), changes: z.array(z.looseObject({ field: z.string(), value: z.unknown() })) })),
});

/** The object Cloud API webhooks are about. */
export const WHATSAPP_OBJECT = "whatsapp_business_account";

export interface ParsedWebhook {
  object: string;
  /** The `messages` changes' values, in the order they came. */
  values: WhatsAppValue[];
  /** Changes of other fields (account updates, templates...): not ours to answer. */
  otherChanges: number;
}

export type ParseResult = { ok: true; webhook: ParsedWebhook } | { ok: false; message: string };

export function parseWhatsAppWebhook(raw: Buffer): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    return { ok: false, message: "body is not valid JSON" };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { ok: false, message: "body must be a JSON object" };
  const outer = WebhookSchema.safeParse(json);
  if (!outer.success) return { ok: false, message: describe(outer.error, []) };
  const values: WhatsAppValue[] = [];
  let otherChanges = 0;
  for (const [e, entry] of outer.data.entry.entries()) {
    for (const [c, change] of entry.changes.entries()) {
      if (change.field !== "messages") {
        otherChanges++;
        continue;
      }
      const value = WhatsAppValueSchema.safeParse(change.value);
      if (!value.success) return { ok: false, message: describe(value.error, ["entry", e, "changes", c, "value"]) };
      values.push(value.data);
    }
  }
  return { ok: true, webhook: { object: outer.data.object, values, otherChanges } };
}

/** The first problem, with the path of the field: `entry.0.changes.0.value.messages.1.id: ...`. */
function describe(error: z.ZodError, prefix: Array<string | number>): string {
  const issue = error.issues[0];
  const path = [...prefix, ...(issue?.path ?? []).map((p) => (typeof p === "symbol" ? String(p) : p))].join(".") || "body";
  return `not a WhatsApp webhook payload: ${path}: ${issue?.message ?? "invalid"}`;
}
