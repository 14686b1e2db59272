// The Discord adapter: HTTP interactions (when a public key is set), the gateway bot (when a bot
// token is set), and replies through REST: follow-ups for interactions, channel messages (as
// replies to the user's message) otherwise. Replies over 2000 characters go as several messages.
// Its parts: bot-connection.ts (the bot's connection, with backoff), reply-operations.ts (post
// and edit one part), routes.ts (the interactions route), streaming.ts.
//
// Visible marks: a resend that may repeat an earlier reply ends with an italic note
// (POSSIBLE_DUPLICATE_NOTE). Typing: POST /channels/:id/typing for channel targets; for an
// interaction the deferred response already shows "thinking".
import { createDiscordStreamingReply } from "./streaming.js";
import type { Logger } from "pino";
import type { GatewayIngress, OutboundReply, PlatformAdapter, SendResult } from "../../gateway/types.js";
import { ReplyPipeline } from "../shared/reply-pipeline.js";
import { RetryAfterGate, type RateLimitGates } from "../shared/retry-after-gate.js";
import type { MessagePoster } from "../shared/streaming.js";
import { optionalString, requiredString } from "../shared/target.js";
import { InMemoryThreadMemory, type ThreadMemory } from "../../bus/thread-memory.js";
import { fetchDiscordAttachment } from "./attachments.js";
import { discordBotConnection } from "./bot-connection.js";
import { discordThreadKey } from "./channels.js";
import { DISCORD_MAX_CONTENT, normaliseDiscordApiUrl, type DiscordConfig } from "./config.js";
import { discordPartOperations } from "./reply-operations.js";
import { DiscordRest } from "./rest.js";
import { DISCORD_INTERACTIONS_PATH, discordRoutes } from "./routes.js";
import { discordHeadersProblem } from "./signature.js";
import { headerValue } from "../shared/headers.js";
import { headerRule, platformBodyLimit } from "../shared/request-rules.js";
import { discordPublicKey } from "./signature.js";

export interface DiscordAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  threads?: ThreadMemory;
  /** Retry-After windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  fetch?: typeof fetch;
  now?: () => number;
  /** Other bots whose messages are answered (`<platform>:<bot id>`, access `allow_bots`); others' are ignored. */
  allowedBots?: ReadonlySet<string>;
}

/** An interaction is a command and its options (and resolved users, channels, attachments): a few KB. */
const DISCORD_MAX_BODY_BYTES = 256 * 1024;

export interface DiscordAdapter extends PlatformAdapter, MessagePoster {
  readonly platform: "discord";
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
}

export function createDiscordAdapter(config: DiscordConfig, deps: DiscordAdapterDeps): DiscordAdapter {
  const logger = deps.logger.child({ adapter: "discord" });
  const now = deps.now ?? Date.now;
  const threads = deps.threads ?? new InMemoryThreadMemory();
  const apiUrl = normaliseDiscordApiUrl(config.apiUrl);
  const rest = new DiscordRest(apiUrl, config.botToken ?? null, deps.fetch ?? fetch);
  const publicKey = config.publicKey ? discordPublicKey(config.publicKey) : null;
  const bot = config.botToken ? discordBotConnection({ token: config.botToken, apiUrl, threads, logger, allowedBots: deps.allowedBots ?? new Set() }) : null;
  const opsFor = discordPartOperations(config, rest, logger);

  const replies = new ReplyPipeline({
    platform: "Discord",
    splitLimit: DISCORD_MAX_CONTENT,
    // Per destination: a 429 on a streamed preview also holds back the delivery that follows it.
    gate: new RetryAfterGate(deps.rateLimits?.windows("discord")),
    gateKey: (target) => optionalString(target, "interaction_token") ?? optionalString(target, "channel_id") ?? "",
    parts: (reply) => opsFor(reply.target),
    rememberThread: (target) => {
      const threadId = optionalString(target, "thread_id");
      if (threadId) threads.remember(discordThreadKey(threadId));
    },
  });

  const bodyLimitBytes = platformBodyLimit(deps.bodyLimitBytes, DISCORD_MAX_BODY_BYTES);
  const adapter: DiscordAdapter = {
    platform: "discord",
    capabilities: { threads: true, edits: true, streaming: true, typing: true },

    routes: publicKey
      ? (ingress: GatewayIngress) =>
          discordRoutes(ingress, { publicKey, bodyLimitBytes, logger, now })
      : undefined,

    requestRules: publicKey
      ? () => [
          headerRule(DISCORD_INTERACTIONS_PATH, bodyLimitBytes, "invalid_signature", (headers) =>
            discordHeadersProblem({ signature: headerValue(headers, "x-signature-ed25519"), timestamp: headerValue(headers, "x-signature-timestamp") }),
          ),
        ]
      : undefined,

    start: bot ? (ingress: GatewayIngress) => bot.start(ingress) : undefined,

    async stop() {
      await bot?.stop();
    },

    send: (reply: OutboundReply): Promise<SendResult> => replies.send(reply),

    postMessage: (target, text) => replies.postPreview(target, () => opsFor(target).post(truncate(text), 0)),

    edit: (target, platformMessageId, text) => replies.editPreview(target, () => opsFor(target).edit(platformMessageId, truncate(text))),

    openStream(target) {
      return createDiscordStreamingReply(adapter, target);
    },

    async typing(target) {
      if (optionalString(target, "kind") === "interaction" || !rest.hasBotToken) return;
      await rest.triggerTyping(requiredString(target, "channel_id", "discord"));
    },

    fetchMedia(ref, limits) {
      return fetchDiscordAttachment(ref, limits, { apiUrl, fetch: deps.fetch });
    },
  };
  return adapter;
}

function truncate(text: string): string {
  return text.length <= DISCORD_MAX_CONTENT ? text : `${text.slice(0, DISCORD_MAX_CONTENT - 1)}…`;
}
