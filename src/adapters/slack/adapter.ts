// The Slack adapter: Events API ingress over signed HTTP routes (with a signing secret) and/or
// Socket Mode (with an app-level token), replies through chat.postMessage / chat.update.
// Its parts: transports.ts (how events arrive), replies.ts (how replies go out),
// bot-identity.ts (the bot's user id), streaming.ts (a reply streamed into one message).
//
// Visible marks: a resend that may repeat an earlier reply ends with an italic note
// (POSSIBLE_DUPLICATE_NOTE) and carries message metadata (replies.ts).
// Typing: Slack has no typing indicator for bot messages through the Web API, so typing() is a no-op.
import { createSlackStreamingReply } from "./streaming.js";
import type { Logger } from "pino";
import type { OutboundReply, PlatformAdapter, SendResult } from "../../gateway/types.js";
import type { RateLimitGates } from "../shared/retry-after-gate.js";
import type { MessagePoster } from "../shared/streaming.js";
import { optionalString } from "../shared/target.js";
import { InMemoryThreadMemory, type ThreadMemory } from "../../bus/thread-memory.js";
import { slackBotUserIdLookup } from "./bot-identity.js";
import { createSlackWebClient } from "./client.js";
import { normaliseSlackApiUrl, type SlackConfig } from "./config.js";
import { fetchSlackFile } from "./files.js";
import { createSlackReplies, postSlackMessage, slackChannelOf, updateSlackMessage } from "./replies.js";
import { slackTransports } from "./transports.js";

export { SLACK_MAX_TEXT } from "./replies.js";

export interface SlackAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Threads the bot takes part in; default: in memory, bounded. */
  threads?: ThreadMemory;
  /** Retry-After windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  /** Clock for signature windows and receivedAt (tests). */
  now?: () => number;
  /** Other bots whose messages are answered (`<platform>:<bot id>`, access `allow_bots`); others' are ignored. */
  allowedBots?: ReadonlySet<string>;
}

export interface SlackAdapter extends PlatformAdapter, MessagePoster {
  readonly platform: "slack";
  /** The bot's own user id (config, else auth.test; null when auth.test fails). */
  botUserId(): Promise<string | null>;
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
}

export function createSlackAdapter(config: SlackConfig, deps: SlackAdapterDeps): SlackAdapter {
  const logger = deps.logger.child({ adapter: "slack" });
  const now = deps.now ?? Date.now;
  const threads = deps.threads ?? new InMemoryThreadMemory();
  const apiUrl = normaliseSlackApiUrl(config.apiUrl);
  const client = createSlackWebClient(config.botToken, apiUrl, logger);
  const botUserId = slackBotUserIdLookup(config, client, logger);
  const transports = slackTransports(config, {
    intakeContext: { logger, threads, now, resolveBotUserId: botUserId, configuredBotUserId: config.botUserId ?? null, allowedBots: deps.allowedBots ?? new Set() },
    apiUrl,
    bodyLimitBytes: deps.bodyLimitBytes,
    logger,
    now,
  });
  const replies = createSlackReplies({ client, threads, rateLimits: deps.rateLimits, logger });

  const adapter: SlackAdapter = {
    platform: "slack",
    capabilities: { threads: true, edits: true, streaming: true, typing: false },
    ...transports,
    botUserId,

    send: (reply: OutboundReply): Promise<SendResult> => replies.send(reply),

    postMessage: (target, text) =>
      replies.postPreview(target, () => postSlackMessage(client, { channel: slackChannelOf(target), threadTs: optionalString(target, "thread_ts") }, text)),

    edit: (target, platformMessageId, text) => replies.editPreview(target, () => updateSlackMessage(client, slackChannelOf(target), platformMessageId, text)),

    openStream(target) {
      return createSlackStreamingReply(adapter, target);
    },

    async typing() {
      // No bot typing indicator in Slack's Web API.
    },

    fetchMedia(ref, limits) {
      return fetchSlackFile(ref, limits, { botToken: config.botToken, apiUrl });
    },
  };
  return adapter;
}
