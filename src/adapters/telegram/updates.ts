// The parts of a Telegram Update the adapter reads, checked at the edge (webhook bodies and
// getUpdates results take the same path). Other fields pass through untouched; a field we read
// with the wrong type makes the update malformed.
import { z } from "zod";

const int = z.number().int();

const UserSchema = z.looseObject({
  id: int,
  is_bot: z.boolean(),
  first_name: z.string().optional(),
  username: z.string().optional(),
});

const EntitySchema = z.looseObject({
  type: z.string(),
  offset: int.min(0),
  length: int.min(0),
  user: z.looseObject({ id: int }).optional(),
});

const FileSchema = z.looseObject({
  file_id: z.string(),
  file_unique_id: z.string().optional(),
  file_name: z.string().optional(),
  mime_type: z.string().optional(),
  file_size: int.min(0).optional(),
});

export const TelegramMessageSchema = z.looseObject({
  message_id: int,
  date: int,
  chat: z.looseObject({
    id: int,
    type: z.string(),
    title: z.string().optional(),
    username: z.string().optional(),
    is_forum: z.boolean().optional(),
  }),
  from: UserSchema.optional(),
  /** Set when an anonymous group admin or a channel speaks (then `from` is a placeholder bot). */
  sender_chat: z.looseObject({ id: int }).optional(),
  is_automatic_forward: z.boolean().optional(),
  message_thread_id: int.optional(),
  is_topic_message: z.boolean().optional(),
  text: z.string().optional(),
  entities: z.array(EntitySchema).optional(),
  caption: z.string().optional(),
  caption_entities: z.array(EntitySchema).optional(),
  reply_to_message: z.looseObject({ message_id: int, from: UserSchema.optional() }).optional(),
  photo: z.array(FileSchema).optional(),
  document: FileSchema.optional(),
  video: FileSchema.optional(),
  audio: FileSchema.optional(),
  voice: FileSchema.optional(),
  animation: FileSchema.optional(),
});

export const TelegramUpdateSchema = z.looseObject({
  update_id: int.min(0),
  message: TelegramMessageSchema.optional(),
});

export type TelegramUpdate = z.infer<typeof TelegramUpdateSchema>;
export type TelegramMessage = z.infer<typeof TelegramMessageSchema>;
export type TelegramEntity = z.infer<typeof EntitySchema>;

/** The update, or null when it is not one (or a field the adapter reads has the wrong type). */
export function parseTelegramUpdate(input: unknown): TelegramUpdate | null {
  const parsed = TelegramUpdateSchema.safeParse(input);
  return parsed.success ? parsed.data : null;
}

/** The update types the adapter acts on (setWebhook / getUpdates `allowed_updates`). */
export const TELEGRAM_ALLOWED_UPDATES = ["message"] as const;
