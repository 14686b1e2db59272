// Discord interactions (HTTP): PING, and application commands normalised to InboundMessages.
//
// Commands: `/ask text:<...>` becomes a prompt; `/stop`, `/new`, `/status`, `/help` become that
// text for the gateway to interpret. The reply is a follow-up to the deferred response.
import { z } from "zod";
import type { InboundMessage } from "../../gateway/types.js";
import { discordSessionKey, isThreadChannel } from "./channels.js";

export const INTERACTION_TYPE = { Ping: 1, ApplicationCommand: 2 } as const;
export const INTERACTION_RESPONSE = { Pong: 1, ChannelMessage: 4, DeferredChannelMessage: 5 } as const;
/** Message flag: only the invoking user sees it. */
export const EPHEMERAL = 64;

const UserSchema = z.looseObject({
  id: z.string(),
  username: z.string().optional(),
  global_name: z.string().nullable().optional(),
  bot: z.boolean().optional(),
});

const OptionSchema = z.looseObject({
  name: z.string(),
  type: z.number(),
  value: z.union([z.string(), z.number(), z.boolean()]).optional(),
});

export const InteractionSchema = z.looseObject({
  id: z.string(),
  application_id: z.string(),
  type: z.number(),
  token: z.string(),
  guild_id: z.string().nullish(),
  channel_id: z.string().nullish(),
  channel: z
    .looseObject({
      id: z.string(),
      type: z.number(),
      name: z.string().nullable().optional(),
      parent_id: z.string().nullable().optional(),
    })
    .nullish(),
  member: z.looseObject({ user: UserSchema }).nullish(),
  user: UserSchema.nullish(),
  data: z
    .looseObject({
      name: z.string(),
      type: z.number().optional(),
      options: z.array(OptionSchema).optional(),
    })
    .nullish(),
});
export type Interaction = z.infer<typeof InteractionSchema>;

const GATEWAY_COMMANDS = new Set(["stop", "new", "status", "help"]);
const PROMPT_OPTIONS = ["text", "prompt", "message", "question"];

export type CommandDecision =
  | { kind: "accept"; message: InboundMessage }
  | { kind: "reply"; content: string };

function commandText(interaction: Interaction): string | null {
  const data = interaction.data;
  if (!data) return null;
  const name = data.name.toLowerCase();
  const options = data.options ?? [];
  const stringOption = (names: string[]) => {
    const option = options.find((o) => names.includes(o.name)) ?? options.find((o) => typeof o.value === "string");
    return option?.value === undefined ? "" : String(option.value).trim();
  };
  if (name === "ask") return stringOption(PROMPT_OPTIONS);
  if (GATEWAY_COMMANDS.has(name)) {
    const args = options.length ? stringOption(["text", "reason", "args"]) : "";
    return args ? `/${name} ${args}` : `/${name}`;
  }
  return null;
}

export function normaliseInteractionCommand(interaction: Interaction, now: number): CommandDecision {
  const text = commandText(interaction);
  if (text === null) return { kind: "reply", content: `Unknown command /${interaction.data?.name ?? "?"}` };
  if (text === "") return { kind: "reply", content: "Please give /ask some text." };
  const user = interaction.member?.user ?? interaction.user;
  const channelId = interaction.channel_id ?? interaction.channel?.id;
  if (!channelId) return { kind: "reply", content: "This command needs a channel." };
  const guildId = interaction.guild_id ?? null;
  const inThread = guildId !== null && isThreadChannel(interaction.channel?.type);
  const threadId = inThread ? channelId : null;
  const channelForKey = inThread ? (interaction.channel?.parent_id ?? channelId) : channelId;
  return {
    kind: "accept",
    message: {
      platform: "discord",
      // Interaction ids are snowflakes, unique like message ids.
      platformMessageId: interaction.id,
      sessionKey: discordSessionKey(guildId, channelForKey, threadId),
      chatId: channelId,
      threadId,
      userId: user?.id ?? null,
      workspaceId: guildId,
      text,
      displayKind: "discord_command",
      displayMetadata: {
        guild_id: guildId,
        channel_id: channelId,
        channel_name: interaction.channel?.name ?? null,
        thread_id: threadId,
        user_id: user?.id ?? null,
        username: user?.username ?? null,
        global_name: user?.global_name ?? null,
        command: interaction.data?.name ?? null,
      },
      receivedAt: now,
      replyTarget: {
        kind: "interaction",
        application_id: interaction.application_id,
        interaction_token: interaction.token,
        channel_id: channelId,
        guild_id: guildId,
        ...(threadId ? { thread_id: threadId } : {}),
      },
    },
  };
}
