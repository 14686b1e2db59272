// How one part of a Discord reply is posted and edited: as follow-ups of an interaction (falling
// back to the channel once its token has expired), or as channel messages, the first a reply to
// the user's message.
import type { Logger } from "pino";
import { PermanentSendError } from "../../gateway/types.js";
import type { PartOperations } from "../shared/multipart-send.js";
import { optionalString, requiredString } from "../shared/target.js";
import type { DiscordConfig } from "./config.js";
import { DiscordRest, DiscordRestError, type DiscordMessageBody } from "./rest.js";

/** Errors that mean an interaction token has expired (tokens live 15 minutes). */
const EXPIRED_TOKEN_CODES = new Set([10015, 50027]);

/** No pings from model text: no @everyone, roles or users; the replied-to user is still notified. */
const ALLOWED_MENTIONS = { parse: [] as string[], replied_user: true };

/** The part operations for a reply target. */
export type DiscordPartOperations = (target: Record<string, unknown>) => PartOperations;

export function discordPartOperations(config: DiscordConfig, rest: DiscordRest, logger: Logger): DiscordPartOperations {
  const body = (content: string, replyTo: string | null): DiscordMessageBody => ({
    content,
    allowed_mentions: ALLOWED_MENTIONS,
    ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
  });

  const interactionOps = (target: Record<string, unknown>): PartOperations => {
    const applicationId = optionalString(target, "application_id") ?? config.applicationId ?? null;
    if (!applicationId) throw new PermanentSendError("discord reply target has no application_id");
    const token = requiredString(target, "interaction_token", "discord");
    const channelId = optionalString(target, "channel_id");
    const expired = (error: unknown) =>
      error instanceof DiscordRestError &&
      (error.status === 401 || (error.discordCode !== null && EXPIRED_TOKEN_CODES.has(error.discordCode)));
    return {
      post: async (text) => {
        try {
          return await rest.followUp(applicationId, token, body(text, null));
        } catch (error) {
          // A late reply (token expired) still reaches the channel when the bot can post there.
          if (!expired(error) || !channelId || !rest.hasBotToken) throw error;
          logger.warn({ channelId }, "discord interaction token expired; posting the reply to the channel");
          return rest.createMessage(channelId, body(text, null));
        }
      },
      edit: (id, text) => rest.editFollowUp(applicationId, token, id, body(text, null)),
    };
  };

  const channelOps = (target: Record<string, unknown>): PartOperations => {
    const channelId = requiredString(target, "channel_id", "discord");
    const replyTo = optionalString(target, "reply_to");
    return {
      post: (text, index) => rest.createMessage(channelId, body(text, index === 0 ? replyTo : null)),
      edit: (id, text) => rest.editMessage(channelId, id, body(text, null)),
    };
  };

  return (target) => (optionalString(target, "kind") === "interaction" ? interactionOps(target) : channelOps(target));
}
