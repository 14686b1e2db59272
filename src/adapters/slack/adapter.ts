// The Slack adapter: Events API ingress over signed HTTP routes (with a signing secret) and/or
// Socket Mode (with an app-level token), replies through chat.postMessage / chat.update.
//
// Visible marks: a resend that may repeat an earlier reply ends with an italic note
// (POSSIBLE_DUPLICATE_NOTE) and carries message metadata
// `{event_type: "switchboard_reply", event_payload: {delivery_id, session_id, possible_duplicate}}`.
// Typing: Slack has no typing indicator for bot messages through the Web API, so typing() is a no-op.
import { createSlackStreamingReply } from "./streaming.js";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { GatewayIngress, OutboundReply, PlatformAdapter, SendResult } from "../../gateway/types.js";
import { ReplyPipeline } from "../shared/reply-pipeline.js";
import { RetryAfterGate, type RateLimitGates } from "../shared/retry-after-gate.js";
import type { MessagePoster } from "../shared/streaming.js";
import { optionalString, requiredString } from "../shared/target.js";
import { InMemoryThreadMemory, type ThreadMemory } from "../../bus/thread-memory.js";
import { createSlackWebClient, slackErrorCode, toSendError, UNEDITABLE_ERRORS } from "./client.js";
import { normaliseSlackApiUrl, type SlackConfig } from "./config.js";
import { slackThreadKey } from "./events.js";
import { fetchSlackFile } from "./files.js";
import { slackEventsAnswer } from "./events-answer.js";
import { createSlackIntake, type SlackIntakeContext } from "./intake.js";
import { slackRoutes } from "./routes.js";
import { createSocketEnvelopeHandler } from "./socket-envelopes.js";
import type { SlackSocketMode } from "./socket-mode.js";

/** Slack truncates message text beyond 40,000 characters; longer replies go as several messages. */
export const SLACK_MAX_TEXT = 39_000;

export interface SlackAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Threads the bot takes part in; default: in memory, bounded. */
  threads?: ThreadMemory;
  /** Retry-After windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  /** Clock for signature windows and receivedAt (tests). */
  now?: () => number;
}

export interface SlackAdapter extends PlatformAdapter, MessagePoster {
  readonly platform: "slack";
  /** The bot's own user id (config, else auth.test; null when auth.test fails). */
  botUserId(): Promise<string | null>;
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
}

interface PostOptions {
  channel: string;
  threadTs: string | null;
  metadata?: { event_type: string; event_payload: Record<string, string | number | boolean> };
}

export function createSlackAdapter(config: SlackConfig, deps: SlackAdapterDeps): SlackAdapter {
  const logger = deps.logger.child({ adapter: "slack" });
  const now = deps.now ?? Date.now;
  const threads = deps.threads ?? new InMemoryThreadMemory();
  const apiUrl = normaliseSlackApiUrl(config.apiUrl);
  const client: WebClient = createSlackWebClient(config.botToken, apiUrl, logger);
  let identity: Promise<string | null> | null = null;

  const botUserId = (): Promise<string | null> => {
    if (config.botUserId) return Promise.resolve(config.botUserId);
    identity ??= client.auth.test().then(
      (result) => result.user_id ?? null,
      (error: unknown) => {
        identity = null; // try again next time
        logger.warn({ code: slackErrorCode(error) }, "slack auth.test failed; bot user id unknown");
        return null;
      },
    );
    return identity;
  };

  const intakeContext: SlackIntakeContext = {
    logger,
    threads,
    now,
    resolveBotUserId: botUserId,
    configuredBotUserId: config.botUserId ?? null,
  };
  const signingSecret = config.signingSecret ?? null;
  const appToken = config.appToken ?? null;
  let socketMode: SlackSocketMode | null = null;

  const post = async ({ channel, threadTs, metadata }: PostOptions, text: string): Promise<string> => {
    try {
      const result = await client.chat.postMessage({
        channel,
        text,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        ...(metadata ? { metadata } : {}),
      });
      if (!result.ts) throw new Error("Slack chat.postMessage returned no ts");
      return result.ts;
    } catch (error) {
      throw toSendError(error, "chat.postMessage");
    }
  };

  const update = async (channel: string, ts: string, text: string): Promise<void> => {
    try {
      await client.chat.update({ channel, ts, text });
    } catch (error) {
      throw toSendError(error, "chat.update");
    }
  };

  const channelOf = (target: Record<string, unknown>): string => requiredString(target, "channel", "slack");

  const rememberThread = (target: Record<string, unknown>) => {
    const threadTs = optionalString(target, "thread_ts");
    if (threadTs) threads.remember(slackThreadKey(optionalString(target, "team") ?? "unknown", channelOf(target), threadTs));
  };

  const replies = new ReplyPipeline({
    platform: "Slack",
    splitLimit: SLACK_MAX_TEXT,
    // Per channel: a 429 on a streamed preview also holds back the delivery that follows it.
    gate: new RetryAfterGate(deps.rateLimits?.windows("slack")),
    gateKey: channelOf,
    rememberThread,
    parts: (reply) => {
      const channel = channelOf(reply.target);
      const options: PostOptions = {
        channel,
        threadTs: optionalString(reply.target, "thread_ts"),
        metadata: {
          event_type: "switchboard_reply",
          event_payload: { delivery_id: reply.deliveryId, session_id: reply.sessionId, possible_duplicate: reply.possibleDuplicate },
        },
      };
      return {
        post: (part) => post(options, part),
        edit: async (ts, part) => {
          try {
            await client.chat.update({ channel, ts, text: part });
          } catch (error) {
            const code = slackErrorCode(error);
            if (code === null || !UNEDITABLE_ERRORS.has(code)) throw toSendError(error, "chat.update");
            // The streamed message is gone or frozen: post the final text instead of losing it.
            logger.warn({ deliveryId: reply.deliveryId, code }, "slack message not editable; posting the reply anew");
            return post(options, part);
          }
        },
      };
    },
  });

  const adapter: SlackAdapter = {
    platform: "slack",
    capabilities: { threads: true, edits: true, streaming: true, typing: false },

    routes: signingSecret
      ? (ingress: GatewayIngress) =>
          slackRoutes({
            signingSecret,
            bodyLimitBytes: deps.bodyLimitBytes,
            logger,
            now,
            intake: createSlackIntake(ingress, intakeContext),
          })
      : undefined,

    // The events route again, for the HTTP server to answer without Express (the hot path).
    plainRoutes: signingSecret
      ? (ingress: GatewayIngress) => [
          {
            path: "/slack/events",
            bodyLimitBytes: deps.bodyLimitBytes,
            answer: slackEventsAnswer({ signingSecret, logger, now, intake: createSlackIntake(ingress, intakeContext) }),
          },
        ]
      : undefined,

    // Socket Mode connects in the background and keeps reconnecting: Slack being unreachable
    // must not keep the gateway from starting. Its SDK (and the WebSocket client under it) is
    // loaded only here: a gateway on the Events API alone does not hold it in memory.
    start: appToken
      ? async (ingress: GatewayIngress) => {
          await socketMode?.stop();
          const { startSlackSocketMode } = await import("./socket-mode.js");
          socketMode = startSlackSocketMode({
            appToken,
            apiUrl,
            logger,
            onEnvelope: createSocketEnvelopeHandler(createSlackIntake(ingress, intakeContext), logger),
          });
        }
      : undefined,

    async stop() {
      await socketMode?.stop();
      socketMode = null;
    },

    botUserId,

    send: (reply: OutboundReply): Promise<SendResult> => replies.send(reply),

    postMessage: (target, text) =>
      replies.postPreview(target, () => post({ channel: channelOf(target), threadTs: optionalString(target, "thread_ts") }, text)),

    edit: (target, platformMessageId, text) => replies.editPreview(target, () => update(channelOf(target), platformMessageId, text)),

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
