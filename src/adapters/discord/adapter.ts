// The Discord adapter: HTTP interactions (when a public key is set), the gateway bot (when a bot
// token is set), and replies through REST: follow-ups for interactions, channel messages (as
// replies to the user's message) otherwise. Replies over 2000 characters go as several messages.
//
// Visible marks: a resend that may repeat an earlier reply ends with an italic note
// (POSSIBLE_DUPLICATE_NOTE). Typing: POST /channels/:id/typing for channel targets; for an
// interaction the deferred response already shows "thinking".
import { createDiscordStreamingReply } from "./streaming.js";
import type { Logger } from "pino";
import {
  PermanentSendError,
  type GatewayIngress,
  type OutboundReply,
  type PlatformAdapter,
  type SendResult,
} from "../../gateway/types.js";
import type { PartOperations } from "../shared/multipart-send.js";
import { ReplyPipeline } from "../shared/reply-pipeline.js";
import { RetryAfterGate, type RateLimitGates } from "../shared/retry-after-gate.js";
import type { MessagePoster } from "../shared/streaming.js";
import { optionalString, requiredString } from "../shared/target.js";
import { InMemoryThreadMemory, type ThreadMemory } from "../../bus/thread-memory.js";
import { fetchDiscordAttachment } from "./attachments.js";
import { discordThreadKey } from "./channels.js";
import { DISCORD_MAX_CONTENT, normaliseDiscordApiUrl, type DiscordConfig } from "./config.js";
import { startDiscordGatewayClient, type DiscordGatewayClient } from "./gateway-client.js";
import { DiscordRest, DiscordRestError, type DiscordMessageBody } from "./rest.js";
import { discordRoutes } from "./routes.js";
import { discordPublicKey } from "./signature.js";

export interface DiscordAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  threads?: ThreadMemory;
  /** Retry-After windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  fetch?: typeof fetch;
  now?: () => number;
}

export interface DiscordAdapter extends PlatformAdapter, MessagePoster {
  readonly platform: "discord";
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
}

/** Errors that mean an interaction token has expired (tokens live 15 minutes). */
const EXPIRED_TOKEN_CODES = new Set([10015, 50027]);

/** No pings from model text: no @everyone, roles or users; the replied-to user is still notified. */
const ALLOWED_MENTIONS = { parse: [] as string[], replied_user: true };

export function createDiscordAdapter(config: DiscordConfig, deps: DiscordAdapterDeps): DiscordAdapter {
  const logger = deps.logger.child({ adapter: "discord" });
  const now = deps.now ?? Date.now;
  const threads = deps.threads ?? new InMemoryThreadMemory();
  const apiUrl = normaliseDiscordApiUrl(config.apiUrl);
  const rest = new DiscordRest(apiUrl, config.botToken ?? null, deps.fetch ?? fetch);
  const publicKey = config.publicKey ? discordPublicKey(config.publicKey) : null;
  let gateway: DiscordGatewayClient | null = null;
  let stopped = false;
  let reconnectTimer: NodeJS.Timeout | null = null;

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

  const opsFor = (target: Record<string, unknown>): PartOperations =>
    optionalString(target, "kind") === "interaction" ? interactionOps(target) : channelOps(target);

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

  const adapter: DiscordAdapter = {
    platform: "discord",
    capabilities: { threads: true, edits: true, streaming: true, typing: true },

    routes: publicKey
      ? (ingress: GatewayIngress) =>
          discordRoutes(ingress, { publicKey, bodyLimitBytes: deps.bodyLimitBytes, logger, now })
      : undefined,

    // Discord being unreachable must not keep the gateway from starting: connect in the
    // background and retry with backoff (interactions and replies work meanwhile).
    start: config.botToken
      ? async (ingress: GatewayIngress) => {
          stopped = false;
          const connect = async (attempt: number): Promise<void> => {
            try {
              const client = await startDiscordGatewayClient({ token: config.botToken as string, apiUrl, ingress, threads, logger });
              if (stopped) await client.stop();
              else gateway = client;
            } catch (error) {
              if (stopped) return;
              const delayMs = Math.min(300_000, 5_000 * 2 ** attempt);
              logger.warn({ err: (error as Error).message, retryInMs: delayMs }, "discord gateway connection failed; retrying");
              reconnectTimer = setTimeout(() => void connect(attempt + 1), delayMs);
              reconnectTimer.unref();
            }
          };
          void connect(0);
        }
      : undefined,

    async stop() {
      stopped = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = null;
      await gateway?.stop();
      gateway = null;
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
