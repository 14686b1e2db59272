// The Discord gateway bot (discord.js): receives guild and direct messages and hands each one,
// normalised, to a handler. Started only when a bot token is configured.
import type { Message } from "discord.js";
import type { Logger } from "pino";
import type { GatewayIngress } from "../../gateway/types.js";
import type { ThreadMemory } from "../../bus/thread-memory.js";
import { discordMessageLike, normaliseDiscordMessage, type DiscordMessageLike } from "./message.js";

/** discord.js wants the API root and the version apart: `https://discord.com/api` + `10`. */
export function splitApiUrl(apiUrl: string): { api: string; version: string } {
  const match = /^(.*)\/v(\d+)$/.exec(apiUrl);
  return match ? { api: match[1], version: match[2] } : { api: apiUrl, version: "10" };
}

export interface DiscordMessageHandlerDeps {
  ingress: GatewayIngress;
  threads: ThreadMemory;
  logger: Logger;
  botUserId: () => string | null;
  /** Other bots whose messages are answered (`discord:<bot user id>`); default: none. */
  allowedBots?: ReadonlySet<string>;
  /** Attempts to record a message before giving up (the gateway does not redeliver). */
  attempts?: number;
  retryDelayMs?: number;
}

/** Normalises a message and records it; returns the accept status, or why it was skipped. */
export function createDiscordMessageHandler(deps: DiscordMessageHandlerDeps) {
  const attempts = deps.attempts ?? 3;
  const retryDelayMs = deps.retryDelayMs ?? 500;
  return async (message: DiscordMessageLike): Promise<string> => {
    const normalised = normaliseDiscordMessage(message, deps.botUserId(), { threads: deps.threads, ...(deps.allowedBots ? { allowedBots: deps.allowedBots } : {}) });
    if (!normalised) return "ignored";
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await deps.ingress.accept(normalised.message);
        if (result.status !== "rejected" && normalised.rememberThread) deps.threads.remember(normalised.rememberThread);
        if (result.status === "rejected") {
          deps.logger.warn({ messageId: message.id, reason: result.reason }, "discord message rejected by the gateway");
        }
        return result.status;
      } catch (error) {
        if (attempt >= attempts) {
          deps.logger.error({ err: error, messageId: message.id }, "discord message could not be recorded");
          return "failed";
        }
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs * attempt));
      }
    }
  };
}

export interface DiscordGatewayClient {
  stop(): Promise<void>;
}

export async function startDiscordGatewayClient(options: {
  token: string;
  apiUrl: string;
  ingress: GatewayIngress;
  threads: ThreadMemory;
  logger: Logger;
  allowedBots: ReadonlySet<string>;
}): Promise<DiscordGatewayClient> {
  // Loaded only when a bot token is configured: discord.js is large.
  const { Client, Events, GatewayIntentBits, Partials } = await import("discord.js");
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      GatewayIntentBits.MessageContent,
    ],
    // DM channels are not cached before their first message; without this, DMs are dropped.
    partials: [Partials.Channel],
    rest: splitApiUrl(options.apiUrl),
  });
  const handle = createDiscordMessageHandler({
    ingress: options.ingress,
    threads: options.threads,
    allowedBots: options.allowedBots,
    logger: options.logger,
    botUserId: () => client.user?.id ?? null,
  });
  client.on(Events.MessageCreate, (message: Message) => {
    void handle(discordMessageLike(message)).catch((error: unknown) =>
      options.logger.error({ err: error }, "discord message handler failed"),
    );
  });
  client.on(Events.Error, (error) => options.logger.error({ err: error }, "discord client error"));
  client.once(Events.ClientReady, (ready) => options.logger.info({ user: ready.user.tag }, "discord gateway ready"));
  await client.login(options.token);
  return {
    async stop() {
      await client.destroy();
    },
  };
}
